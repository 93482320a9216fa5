// VerifySession: every kind of tampering is caught and named by seq; intact and
// unterminated logs are accepted; hostile files never crash the verifier.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "audit/record.h"
#include "audit/verify.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using State = VerifyReport::State;
using testing::EventsPath;
using testing::HeadPath;
using testing::ReadFile;
using testing::ReadLines;
using testing::TempDir;
using testing::WriteFile;
using testing::WriteLines;
using testing::WriteSession;

class VerifyTest : public ::testing::Test {
 protected:
  // 1 session.start + 6 net.deny + 1 session.end = seq 0..7.
  void SetUp() override { dir_ = WriteSession(tmp_.path(), "s1", 6, true); }
  std::vector<std::string> Lines() { return ReadLines(EventsPath(dir_)); }
  void Expect(State state, int64_t bad_seq) {
    VerifyReport r = VerifySession(dir_);
    EXPECT_EQ(r.state, state) << StateName(r.state) << ": " << r.detail;
    EXPECT_EQ(r.bad_seq, bad_seq) << r.detail;
  }
  // The head as the writer would have left it after record `seq`.
  void SetHead(const std::vector<std::string>& lines, int64_t seq) {
    auto rec = nlohmann::json::parse(lines[static_cast<size_t>(seq)]);
    WriteFile(HeadPath(dir_), CanonicalJson({{"seq", seq}, {"hash", rec["hash"]}}) + "\n");
  }

  TempDir tmp_;
  std::string dir_;
};

TEST_F(VerifyTest, IntactLogVerifies) {
  VerifyReport r = VerifySession(dir_);
  EXPECT_EQ(r.state, State::kIntact) << r.detail;
  EXPECT_EQ(r.records, 8);
  EXPECT_EQ(r.head_seq, 7);
  EXPECT_EQ(r.bad_seq, -1);
  EXPECT_FALSE(r.torn_tail);
}

TEST_F(VerifyTest, UnterminatedLogIsNotTampered) {
  std::string d = WriteSession(tmp_.path(), "s2", 3, false);
  VerifyReport r = VerifySession(d);
  EXPECT_EQ(r.state, State::kUnterminated) << r.detail;
  EXPECT_EQ(r.records, 4);
}

TEST_F(VerifyTest, ChangedDataValueIsTampered) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[3]);
  rec["data"]["host"] = "innocent.example";
  lines[3] = CanonicalJson(rec);  // hash left as it was
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 3);
}

TEST_F(VerifyTest, ChangedDataValueWithRecomputedHashBreaksTheNextLink) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[3]);
  rec["data"]["host"] = "innocent.example";
  rec.erase("hash");
  rec["hash"] = Sha256Hex(CanonicalJson(rec));
  lines[3] = CanonicalJson(rec);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 4);
}

TEST_F(VerifyTest, ChangedTypeIsTampered) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[2]);
  rec["type"] = "net.allow";
  lines[2] = CanonicalJson(rec);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 2);
}

TEST_F(VerifyTest, ChangedTimestampIsTampered) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[5]);
  rec["ts"] = "2001-01-01T00:00:00.000Z";
  lines[5] = CanonicalJson(rec);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 5);
}

TEST_F(VerifyTest, DeletedMiddleRecordIsTampered) {
  auto lines = Lines();
  lines.erase(lines.begin() + 4);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 4);
}

TEST_F(VerifyTest, DeletedMiddleRecordWithRenumberedSeqIsTampered) {
  auto lines = Lines();
  lines.erase(lines.begin() + 4);
  for (size_t i = 4; i < lines.size(); ++i) {
    auto rec = nlohmann::json::parse(lines[i]);
    rec["seq"] = static_cast<int64_t>(i);
    lines[i] = CanonicalJson(rec);
  }
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 4);
}

TEST_F(VerifyTest, SwappedRecordsAreTampered) {
  auto lines = Lines();
  std::swap(lines[2], lines[5]);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 2);
}

TEST_F(VerifyTest, InsertedRecordIsTampered) {
  auto lines = Lines();
  lines.insert(lines.begin() + 3, lines[3]);  // a replayed copy
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 4);
}

TEST_F(VerifyTest, ForgedRecordInsertedWithValidHashIsTampered) {
  auto lines = Lines();
  auto prev = nlohmann::json::parse(lines[2]);
  BuiltRecord forged = BuildRecord(3, "2026-01-01T00:00:00.000Z", "net.allow",
                                   {{"host", "x.example"}}, prev["hash"].get<std::string>());
  lines.insert(lines.begin() + 3, forged.line);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 4);  // the old seq 3 no longer links (and has the wrong seq)
}

TEST_F(VerifyTest, TruncatedTailWithoutFixingHeadIsTampered) {
  auto lines = Lines();
  lines.resize(5);
  WriteLines(EventsPath(dir_), lines);
  Expect(State::kTampered, 5);
}

TEST_F(VerifyTest, TruncatedTailWithFixedHeadIsNoLongerIntact) {
  // Cutting whole records and rewriting the head is indistinguishable from a writer that
  // died there (the chain is not keyed; docs/audit.md). What remains: session.end is gone,
  // so the log is reported unterminated, never intact.
  auto lines = Lines();
  lines.resize(5);
  WriteLines(EventsPath(dir_), lines);
  SetHead(lines, 4);
  VerifyReport r = VerifySession(dir_);
  EXPECT_EQ(r.state, State::kUnterminated) << r.detail;
  EXPECT_EQ(r.records, 5);
}

TEST_F(VerifyTest, TornLastLineIsTampered) {
  std::string text = ReadFile(EventsPath(dir_));
  WriteFile(EventsPath(dir_), text.substr(0, text.size() - 20));
  VerifyReport r = VerifySession(dir_);
  EXPECT_EQ(r.state, State::kTampered) << r.detail;
  EXPECT_EQ(r.bad_seq, 7);
  EXPECT_NE(r.detail.find("incomplete"), std::string::npos) << r.detail;
}

TEST_F(VerifyTest, LastLineWithoutNewlineButHeadCoveringItIsTampered) {
  std::string text = ReadFile(EventsPath(dir_));
  WriteFile(EventsPath(dir_), text.substr(0, text.size() - 1));
  Expect(State::kTampered, 7);
}

TEST_F(VerifyTest, TornTailBeyondTheHeadIsAWriterCrashNotTampering) {
  // What a SIGKILL during write(2) leaves: the head names the last complete record, then
  // part of a record follows.
  std::string d = WriteSession(tmp_.path(), "s3", 2, false);
  auto lines = ReadLines(EventsPath(d));
  auto last = nlohmann::json::parse(lines.back());
  BuiltRecord next =
      BuildRecord(static_cast<int64_t>(lines.size()), "2026-01-01T00:00:00.000Z", "net.deny",
                  {{"host", "a.example"}}, last["hash"].get<std::string>());
  WriteFile(EventsPath(d), ReadFile(EventsPath(d)) + next.line.substr(0, 30));
  VerifyReport r = VerifySession(d);
  EXPECT_EQ(r.state, State::kUnterminated) << r.detail;
  EXPECT_TRUE(r.torn_tail);
  EXPECT_EQ(r.records, 3);  // session.start and two events
}

TEST_F(VerifyTest, HeadLaggingBehindTheLogIsAccepted) {
  // The writer appends to the log before it replaces the head; dying in between is normal.
  auto lines = Lines();
  SetHead(lines, 6);
  VerifyReport r = VerifySession(dir_);
  EXPECT_EQ(r.state, State::kIntact) << r.detail;
  EXPECT_EQ(r.head_seq, 6);
}

TEST_F(VerifyTest, HeadNamingAnotherHashIsTampered) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[6]);
  WriteFile(HeadPath(dir_), CanonicalJson({{"seq", 7}, {"hash", rec["hash"]}}) + "\n");
  Expect(State::kTampered, 7);
}

TEST_F(VerifyTest, HeadMissingOrMalformedIsTampered) {
  for (std::string head : {std::string("garbage"), std::string("{\"seq\":7}\n"),
                           std::string("{\"hash\":\"00\",\"seq\":7}\n"),
                           std::string("{\"hash\":\"") + std::string(64, '0') + "\",\"seq\":-5}\n",
                           std::string("[]\n"), std::string("")}) {
    WriteFile(HeadPath(dir_), head);
    VerifyReport r = VerifySession(dir_);
    EXPECT_EQ(r.state, State::kTampered) << "head: " << head << " -> " << r.detail;
  }
  ASSERT_EQ(::unlink(HeadPath(dir_).c_str()), 0);
  EXPECT_EQ(VerifySession(dir_).state, State::kTampered);
}

TEST_F(VerifyTest, WhitespaceOrKeyOrderEditsAreTampered) {
  auto lines = Lines();
  auto rec = nlohmann::json::parse(lines[1]);
  lines[1] = rec.dump(1);  // same JSON value, different bytes
  WriteLines(EventsPath(dir_), lines);
  EXPECT_EQ(VerifySession(dir_).state, State::kTampered);

  lines = ReadLines(EventsPath(WriteSession(tmp_.path(), "s4", 2, true)));
  std::string edited = lines[1];
  edited.insert(1, " ");
  lines[1] = edited;
  WriteLines(EventsPath(tmp_.path() + "/sessions/s4"), lines);
  VerifyReport r = VerifySession(tmp_.path() + "/sessions/s4");
  EXPECT_EQ(r.state, State::kTampered);
  EXPECT_EQ(r.bad_seq, 1);
}

TEST_F(VerifyTest, ExtraFieldOrWrongFieldTypesAreTampered) {
  auto original = Lines();
  std::vector<std::function<void(nlohmann::json&)>> edits = {
      [](nlohmann::json& j) { j["extra"] = 1; },
      [](nlohmann::json& j) { j["seq"] = "2"; },
      [](nlohmann::json& j) { j["data"] = "text"; },
      [](nlohmann::json& j) { j["type"] = ""; },
      [](nlohmann::json& j) { j["ts"] = "yesterday"; },
      [](nlohmann::json& j) { j["prev"] = "ABC"; },
      [](nlohmann::json& j) { j.erase("prev"); },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    auto lines = original;
    auto rec = nlohmann::json::parse(lines[2]);
    edits[i](rec);
    lines[2] = CanonicalJson(rec);
    WriteLines(EventsPath(dir_), lines);
    VerifyReport r = VerifySession(dir_);
    EXPECT_EQ(r.state, State::kTampered) << "edit " << i << ": " << r.detail;
    EXPECT_EQ(r.bad_seq, 2) << "edit " << i;
  }
}

TEST_F(VerifyTest, HostileFilesNeverCrash) {
  std::vector<std::string> bodies = {
      "",
      "\n",
      "\n\n\n",
      "not json at all\n",
      std::string(1000, '[') + "\n",
      std::string(200000, '{') + "\n",
      "{\"data\":" + std::string(100000, '[') + "\n",
      std::string("\xff\xfe\x00\x01", 4) + "\n",
      "{\"seq\":0}\n",
      "{\"data\":{},\"hash\":1e999,\"prev\":null,\"seq\":-1,\"ts\":0,\"type\":[]}\n",
      std::string(kMaxLineBytes + 10, 'a') + "\n",
      std::string(kMaxLineBytes + 10, 'a'),
  };
  for (size_t i = 0; i < bodies.size(); ++i) {
    WriteFile(EventsPath(dir_), bodies[i]);
    VerifyReport r = VerifySession(dir_);
    if (i == 0) {
      // An empty log with a head naming seq 7: records were cut.
      EXPECT_EQ(r.state, State::kTampered) << r.detail;
    } else {
      EXPECT_EQ(r.state, State::kTampered) << "body " << i << ": " << r.detail;
      EXPECT_EQ(r.bad_seq, 0) << "body " << i;
    }
  }
}

TEST_F(VerifyTest, EmptyNewSessionIsUnterminated) {
  SessionLog::Options opts;
  opts.state_dir = tmp_.path();
  opts.session_id = "empty";
  auto log = SessionLog::Create(opts);
  ASSERT_TRUE(log.ok());
  VerifyReport r = VerifySession((*log)->dir());
  EXPECT_EQ(r.state, State::kUnterminated) << r.detail;
  EXPECT_EQ(r.records, 0);
  EXPECT_EQ(r.head_seq, -1);
}

TEST_F(VerifyTest, MissingLogIsMissing) {
  EXPECT_EQ(VerifySession(tmp_.path() + "/sessions/nope").state, State::kMissing);
  ASSERT_EQ(::unlink(EventsPath(dir_).c_str()), 0);
  EXPECT_EQ(VerifySession(dir_).state, State::kMissing);
}

TEST_F(VerifyTest, SymlinkedLogIsNotFollowed) {
  std::string d = WriteSession(tmp_.path(), "s5", 1, true);
  std::string moved = tmp_.path() + "/elsewhere.jsonl";
  ASSERT_EQ(::rename(EventsPath(d).c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(moved.c_str(), EventsPath(d).c_str()), 0);
  EXPECT_EQ(VerifySession(d).state, State::kMissing);
}

}  // namespace
}  // namespace ward::audit
