// The secret's forms and the streaming masker, without a network: every form inside longer
// text is replaced by the same form of the phantom (decoding the result gives the text with the
// phantom in the secret's place), wherever a stream is cut; ordinary text and non-secret
// values pass unchanged; and the automaton behind it stays linear on hostile input.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "net/broker/credential_broker.h"
#include "net/broker/masker.h"
#include "net/multi_matcher.h"

namespace ward::net {
namespace {

// Shaped like a real token; the phantom has the same length, as the broker's phantoms do.
constexpr char kSecret[] = "sk-ant-api03-Zq8vN2xL5pR7tY1wK4mB9cF3hJ6dS0aQ-Ux7Ve2Wr";
constexpr char kPhantom[] = "sk-ant-api03-Pp1aB2cD3eF4gH5iJ6kL7mN8oQ9rS0tU-Vw1Xy2Zz";
// A secret with characters that percent and JSON escaping change.
constexpr char kOddSecret[] = "tok/en+with=chars&more<1>-0123456789abcdef";
constexpr char kOddPhantom[] = "tok/xy+abcd=efghi&jklm<2>-9876543210fedcba";

std::string Percent(std::string_view s, bool upper, bool only_reserved) {
  std::string out;
  for (char c : s) {
    bool unreserved =
        isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~';
    if (only_reserved && unreserved) {
      out += c;
      continue;
    }
    char b[4];
    snprintf(b, sizeof b, upper ? "%%%02X" : "%%%02x", static_cast<unsigned char>(c));
    out += b;
  }
  return out;
}

std::string Json(std::string_view s, bool all) {
  std::string out;
  for (char c : s) {
    if (all) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
      out += b;
    } else if (c == '/') {
      out += "\\/";
    } else {
      out += c;
    }
  }
  return out;
}

class MaskerTest : public ::testing::Test {
 protected:
  void Use(const char* secret, const char* phantom) {
    secret_ = secret;
    phantom_ = phantom;
    table_ = std::make_unique<SecretMaskTable>(SecretForms(secret_, phantom_));
  }
  void SetUp() override { Use(kSecret, kPhantom); }

  std::string Mask(std::string_view text) {
    SecretMasker m(*table_);
    std::string out = m.Process(text);
    return out + m.Flush();
  }
  // Masked in two pieces cut at every position: the same as in one.
  void ExpectEverySplitAgrees(const std::string& text) {
    const std::string whole = Mask(text);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      SecretMasker m(*table_);
      std::string out = m.Process(text.substr(0, cut));
      out += m.Process(text.substr(cut));
      out += m.Flush();
      ASSERT_EQ(out, whole) << "cut at " << cut;
    }
    // And byte by byte.
    SecretMasker m(*table_);
    std::string out;
    for (char c : text) out += m.Process(std::string_view(&c, 1));
    out += m.Flush();
    EXPECT_EQ(out, whole);
  }

  std::string secret_, phantom_;
  std::unique_ptr<SecretMaskTable> table_;
};

TEST_F(MaskerTest, LiteralSecretBecomesThePhantom) {
  std::string text = "{\"echo\": \"" + secret_ + "\", \"again\": \"" + secret_ + "\"}";
  EXPECT_EQ(Mask(text), "{\"echo\": \"" + phantom_ + "\", \"again\": \"" + phantom_ + "\"}");
  ExpectEverySplitAgrees(text);
}

TEST_F(MaskerTest, Base64AtEveryAlignmentWithAndWithoutPadding) {
  for (int alphabet : {0, 1}) {
    for (size_t before = 0; before < 6; ++before) {
      for (size_t after : {0, 1, 2, 3, 7}) {
        for (bool pad : {true, false}) {
          SCOPED_TRACE("alphabet " + std::to_string(alphabet) + " before " +
                       std::to_string(before) + " after " + std::to_string(after) +
                       (pad ? " padded" : ""));
          std::string head(before, '\xfb'), tail(after, '\xff');  // bits that show as + / - _
          std::string blob = Base64EncodeWith(head + secret_ + tail, alphabet, pad);
          std::string text = "token=" + blob + ";";
          std::string masked = Mask(text);
          std::string want =
              "token=" + Base64EncodeWith(head + phantom_ + tail, alphabet, pad) + ";";
          ASSERT_EQ(Base64Decode(masked.substr(6, masked.size() - 7)), head + phantom_ + tail);
          // Character for character (a URL-safe blob whose secret part has no character of its
          // own alphabet may get a standard one at an edge: it still decodes the same).
          if (alphabet == 0) {
            EXPECT_EQ(masked, want);
          }
        }
      }
    }
  }
  ExpectEverySplitAgrees("x " + Base64EncodeWith("ab" + secret_ + "c", 0, true) + " y");
  ExpectEverySplitAgrees(Base64EncodeWith("a" + secret_, 1, false));
}

TEST_F(MaskerTest, BasicCredentialsAsClientsEncodeThem) {
  for (const std::string& pair :
       {"user:" + secret_, ":" + secret_, secret_ + ":", "x:" + secret_, "admin:" + secret_}) {
    SCOPED_TRACE(pair);
    std::string header = "Authorization: Basic " + Base64Encode(pair) + "\r\n";
    std::string masked = Mask(header);
    std::string value = masked.substr(21, masked.size() - 23);
    std::string want = pair;
    want.replace(want.find(secret_), secret_.size(), phantom_);
    EXPECT_EQ(Base64Decode(value), want);
    ExpectEverySplitAgrees(header);
  }
}

TEST_F(MaskerTest, HexPercentAndJsonEscapes) {
  EXPECT_EQ(Mask("h=" + HexEncode(secret_, false) + "."), "h=" + HexEncode(phantom_, false) + ".");
  EXPECT_EQ(Mask("H=" + HexEncode(secret_, true) + "."), "H=" + HexEncode(phantom_, true) + ".");
  for (bool upper : {true, false}) {
    EXPECT_EQ(Mask("?k=" + Percent(secret_, upper, false)),
              "?k=" + Percent(phantom_, upper, false));
  }
  EXPECT_EQ(Mask("\"" + Json(secret_, true) + "\""), "\"" + Json(phantom_, true) + "\"");
  ExpectEverySplitAgrees("a" + Percent(secret_, true, false) + "b" + Json(secret_, true));

  // Escapes that touch only some characters.
  Use(kOddSecret, kOddPhantom);
  for (bool upper : {true, false}) {
    EXPECT_EQ(Mask("?k=" + Percent(secret_, upper, true) + "&"),
              "?k=" + Percent(phantom_, upper, true) + "&");
  }
  EXPECT_EQ(Mask("{\"k\":\"" + Json(secret_, false) + "\"}"),
            "{\"k\":\"" + Json(phantom_, false) + "\"}");
  EXPECT_EQ(Mask(secret_), phantom_);
}

TEST_F(MaskerTest, NonSecretValuesPassUnchanged) {
  // Positive control: values of the same shapes, not derived from the secret.
  std::mt19937 rng(7);
  std::string other(secret_.size(), 'a');
  for (char& c : other)
    c = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rng() % 62];
  std::string text = other + " " + Base64Encode("user:" + other) + " " + HexEncode(other, false) +
                     " " + Percent(other, true, false) + " " + Json(other, true) + "\n" +
                     secret_.substr(0, secret_.size() - 1) + "!\n";  // all but the last byte
  EXPECT_EQ(Mask(text), text);
  ExpectEverySplitAgrees(text);
}

TEST_F(MaskerTest, OrdinaryTextIsNotHeldBack) {
  SecretMasker m(*table_);
  EXPECT_EQ(m.Process("data: {\"delta\": \"hello\"}\n\n"), "data: {\"delta\": \"hello\"}\n\n");
  EXPECT_EQ(m.Process("event: done\n"), "event: done\n");
  // A secret's beginning is held, and comes out intact when it goes nowhere.
  EXPECT_EQ(m.Process("sk-ant-api03"), "");
  EXPECT_EQ(m.Process(" nope\n"), "sk-ant-api03 nope\n");
}

TEST_F(MaskerTest, ShorterPhantomsMaskWithXs) {
  table_ = std::make_unique<SecretMaskTable>(SecretForms(secret_, "short-phantom-value"));
  std::string masked = Mask("a " + secret_ + " b " + Base64Encode("u:" + secret_) + " c");
  EXPECT_EQ(masked.find(secret_), std::string::npos);
  EXPECT_EQ(masked.size(), 2 + secret_.size() + 3 + Base64Encode("u:" + secret_).size() + 2);
  EXPECT_EQ(masked.substr(0, 2 + secret_.size()), "a " + std::string(secret_.size(), 'x'));
  for (const SecretForm& f : table_->forms()) EXPECT_EQ(masked.find(f.text), std::string::npos);
}

TEST_F(MaskerTest, FormsAreDistinctAndLongEnough) {
  std::vector<SecretForm> forms = SecretForms(secret_, phantom_);
  std::set<std::string> texts;
  for (const SecretForm& f : forms) {
    EXPECT_TRUE(texts.insert(f.text).second) << f.form;
    EXPECT_EQ(f.text.size(), f.replacement.size()) << f.form;
    EXPECT_GE(f.text.size(), 8u) << f.form;
    EXPECT_EQ(f.text.find(phantom_), std::string::npos);
  }
  // literal, base64 (2 alphabets x 3 alignments: this secret has no + / - _ in its encodings at
  // some alignments, which then coincide), hex x2, percent x2 (every byte), JSON \u x2.
  EXPECT_GE(forms.size(), 10u);
}

// The automaton on input built to make naive matchers quadratic: repeated near-matches of
// every form. Its cost per byte does not depend on the input.
TEST_F(MaskerTest, HostileInputStaysLinear) {
  std::string hostile;
  while (hostile.size() < (4 << 20)) {
    for (const SecretForm& f : table_->forms()) hostile += f.text.substr(0, f.text.size() - 1);
  }
  std::string plain(hostile.size(), 'q');
  auto time = [&](const std::string& text) {
    auto t0 = std::chrono::steady_clock::now();
    std::string out = Mask(text);
    auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(out.size(), text.size());
    return std::chrono::duration<double>(t1 - t0).count();
  };
  time(plain);  // warm
  double p = time(plain), h = time(hostile);
  // Generous: a quadratic matcher would be thousands of times slower here.
  EXPECT_LT(h, p * 20 + 0.5) << "plain " << p << " s, hostile " << h << " s";
}

TEST(MultiMatcherTest, FindsOverlappingPatternsAndReportsDepth) {
  MultiMatcher m({"he", "she", "his", "hers"});
  std::string text = "ushers";
  std::vector<std::pair<size_t, size_t>> found;  // end, pattern
  MultiMatcher::State s = MultiMatcher::kStart;
  for (size_t i = 0; i < text.size(); ++i) {
    s = m.Step(s, static_cast<unsigned char>(text[i]));
    m.ForEachMatch(s, [&](size_t p) { found.emplace_back(i + 1, p); });
  }
  std::vector<std::pair<size_t, size_t>> want = {{4, 1}, {4, 0}, {6, 3}};
  EXPECT_EQ(found, want);
  s = MultiMatcher::kStart;
  for (char c : std::string("xxhe")) s = m.Step(s, static_cast<unsigned char>(c));
  EXPECT_EQ(m.depth(s), 2u);  // "he" begins "hers"
}

}  // namespace
}  // namespace ward::net
