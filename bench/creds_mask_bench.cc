// ward_creds_mask_bench: what masking responses costs, per byte, with every form of the secret
// (net/broker/masker.h: one automaton for the literal secret, base64 at each alignment, hex,
// percent and JSON escapes) against the literal-only masker it replaced (one memmem per secret
// and a held-back tail), on the same streams:
//   text     a large JSON-ish body with no secret in it (the common case);
//   echoes   the same with the secret in several forms every 64 KiB;
//   hostile  near-misses of every form back to back (worst case for naive matchers).
// Each stream is fed in pieces of the proxy's read size. Prints MB/s for both and the ratio,
// and the table's size and build time.
//
//   ward_creds_mask_bench [MB] [PIECE]     (defaults: 64 MiB, 16 KiB pieces)
#include <string.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "net/broker/credential_broker.h"
#include "net/broker/masker.h"

namespace {

using Clock = std::chrono::steady_clock;
using ward::net::SecretForm;
using ward::net::SecretForms;
using ward::net::SecretMasker;
using ward::net::SecretMaskTable;

// The masker as it was before encodings were masked: literal secrets only.
class LiteralMasker {
 public:
  explicit LiteralMasker(std::vector<std::pair<std::string, std::string>> secrets)
      : secrets_(std::move(secrets)) {}
  std::string Process(std::string_view data) {
    std::string buf = std::move(held_);
    held_.clear();
    buf.append(data);
    for (const auto& [secret, repl] : secrets_) {
      size_t pos = 0;
      while (pos + secret.size() <= buf.size()) {
        const void* hit = memmem(buf.data() + pos, buf.size() - pos, secret.data(), secret.size());
        if (hit == nullptr) break;
        pos = static_cast<size_t>(static_cast<const char*>(hit) - buf.data());
        buf.replace(pos, secret.size(), repl);
        pos += repl.size();
      }
    }
    size_t hold = 0;
    for (const auto& [secret, repl] : secrets_) {
      size_t max = std::min(secret.size() - 1, buf.size());
      for (size_t k = max; k > hold; --k) {
        if (std::string_view(buf).substr(buf.size() - k) == std::string_view(secret).substr(0, k)) {
          hold = k;
          break;
        }
      }
    }
    if (hold > 0) {
      held_ = buf.substr(buf.size() - hold);
      buf.resize(buf.size() - hold);
    }
    return buf;
  }
  std::string Flush() { return std::exchange(held_, {}); }

 private:
  std::vector<std::pair<std::string, std::string>> secrets_;
  std::string held_;
};

template <typename M>
double MBps(M& m, const std::string& stream, size_t piece, size_t* out_bytes) {
  auto t0 = Clock::now();
  size_t out = 0;
  for (size_t i = 0; i < stream.size(); i += piece) {
    out += m.Process(std::string_view(stream).substr(i, piece)).size();
  }
  out += m.Flush().size();
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  *out_bytes = out;
  return static_cast<double>(stream.size()) / s / 1e6;
}

std::string Text(size_t n) {
  std::mt19937 rng(3);
  std::string s;
  while (s.size() < n) {
    s += "{\"id\": " + std::to_string(rng()) + ", \"name\": \"item-" +
         std::to_string(rng() % 9999) +
         "\", \"tags\": [\"alpha\", \"beta\"], \"note\": \"lorem ipsum dolor sit amet\"},\n";
  }
  s.resize(n);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const size_t piece = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 16384;
  const std::string secret =
      "sk-ant-api03-Zq8vN2xL5pR7tY1wK4mB9cF3hJ6dS0aQ-Ux7Ve2WrT5yU8iO1pA3sD6f";
  const std::string phantom =
      "sk-ant-api03-Pp1aB2cD3eF4gH5iJ6kL7mN8oQ9rS0tU-Vw1Xy2ZzQ4wE7rT0yU3iOab";

  if (phantom.size() != secret.size()) return 2;
  auto t0 = Clock::now();
  SecretMaskTable table(SecretForms(secret, phantom));
  double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("forms %zu, automaton %zu states, table %.0f KiB, built in %.2f ms\n",
              table.forms().size(), table.matcher().states(),
              static_cast<double>(table.matcher().table_bytes()) / 1024, build_ms);

  const std::string text = Text(mb << 20);
  std::string echoes = text;
  const std::vector<std::string> disguises = {secret, ward::net::Base64Encode("user:" + secret),
                                              ward::net::HexEncode(secret, false),
                                              ward::net::Base64EncodeWith("ab" + secret, 1, false)};
  for (size_t at = 1000, k = 0; at + 200 < echoes.size(); at += 65536, ++k) {
    const std::string& d = disguises[k % disguises.size()];
    echoes.replace(at, d.size(), d);
  }
  std::string hostile;
  while (hostile.size() < (mb << 20)) {
    for (const SecretForm& f : table.forms()) hostile += f.text.substr(0, f.text.size() - 1);
  }
  hostile.resize(mb << 20);

  std::printf("%-8s %12s %12s %8s\n", "stream", "literal MB/s", "forms MB/s", "ratio");
  for (const auto& [name, stream] : {std::pair<const char*, const std::string*>{"text", &text},
                                     {"echoes", &echoes},
                                     {"hostile", &hostile}}) {
    double best_old = 0, best_new = 0;
    size_t out_old = 0, out_new = 0;
    for (int run = 0; run < 3; ++run) {
      LiteralMasker old({{secret, phantom}});
      SecretMasker now(table);
      best_old = std::max(best_old, MBps(old, *stream, piece, &out_old));
      best_new = std::max(best_new, MBps(now, *stream, piece, &out_new));
    }
    if (out_old != stream->size() || out_new != stream->size()) {
      std::fprintf(stderr, "output length changed: %zu -> literal %zu, forms %zu\n", stream->size(),
                   out_old, out_new);
      return 1;
    }
    std::printf("%-8s %12.0f %12.0f %8.2f\n", name, best_old, best_new, best_old / best_new);
  }
  return 0;
}
