// Execs through a fake `ward run`: output capture and replay, stdin, timeouts, signals, caps,
// and the rule that a runner that dies without a status is interrupted, never exit 0.
#include "api/exec.h"

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "api_test_util.h"

namespace ward::api {
namespace {

using testing::RunUntil;
using testing::TempDir;

TEST(ClassifyExit, MapsEveryOutcome) {
  auto st = [](const char* j) { return std::optional<nlohmann::json>(nlohmann::json::parse(j)); };
  ExitFacts f;
  f.status = st(R"({"status":"exited","exit_code":3})");
  Outcome o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kExited);
  EXPECT_EQ(o.exit_code, 3);

  f.status = st(R"({"status":"signaled","exit_code":143,"signal":15})");
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kExited);
  EXPECT_EQ(o.signal, 15);
  EXPECT_EQ(o.exit_code, 143);

  f.status = st(R"({"status":"refused","exit_code":125,"message":"no"})");
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kDenied);
  EXPECT_EQ(o.reason["message"], "no");

  f.status = st(R"({"status":"setup_failed","exit_code":125,"stage":"mount","errno":28})");
  EXPECT_EQ(ClassifyExit(f).state, ExecState::kDenied);

  // The exec's audit trail could not be written: ward run stopped it (fail closed).
  f.status =
      st(R"({"status":"audit_failed","exit_code":125,"stage":"audit","errno":28,"message":"m"})");
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kDenied);
  EXPECT_EQ(o.exit_code, 125);
  EXPECT_EQ(o.reason["kind"], "audit_failed");
  EXPECT_EQ(o.reason["stage"], "audit");
  EXPECT_EQ(o.reason["message"], "m");

  f.status = st(R"({"status":"exec_failed","exit_code":127,"errno":2})");
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kExited);
  EXPECT_EQ(o.exit_code, 127);

  // No status: never a made-up 0.
  f.status.reset();
  f.wait_status = 0;  // even when the runner itself exited 0
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kInterrupted);
  EXPECT_FALSE(o.exit_code.has_value());

  f.status = st(R"({"status":"exited"})");  // a status without a code
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kInterrupted);
  EXPECT_FALSE(o.exit_code.has_value());

  f.status.reset();
  f.wait_status = SIGKILL;  // WIFSIGNALED with SIGKILL
  f.kill_requested = true;
  o = ClassifyExit(f);
  EXPECT_EQ(o.state, ExecState::kExited);
  EXPECT_EQ(o.signal, SIGKILL);

  f.timed_out = true;
  EXPECT_EQ(ClassifyExit(f).state, ExecState::kTimedOut);
  f.interrupted = "sandbox destroyed";
  EXPECT_EQ(ClassifyExit(f).state, ExecState::kInterrupted);
}

TEST(Ids, AreCheckedBeforeUse) {
  std::string id = NewId("ex");
  EXPECT_TRUE(ValidId(id, "ex"));
  EXPECT_FALSE(ValidId(id, "sb"));
  EXPECT_NE(NewId("ex"), id);
  EXPECT_FALSE(ValidId("ex-../../etc/pass", "ex"));
  EXPECT_FALSE(ValidId("ex-0123456789ABCDEF", "ex"));
  EXPECT_FALSE(ValidId("ex-0123456789abcde", "ex"));
}

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExecManagerConfig c;
    c.ward_binary = testing::WriteFakeRunner(bin_.path());
    c.state_dir = state_.path() + "/serve";
    c.kill_grace = std::chrono::milliseconds(300);
    mgr_ = std::make_unique<ExecManager>(io_, c);
    ASSERT_TRUE(mgr_->Init().ok());
  }
  StartRequest Req(std::vector<std::string> argv) {
    StartRequest r;
    r.sandbox_id = "sb-0000000000000001";
    r.workspace = ws_.path();
    r.command.argv = std::move(argv);
    return r;
  }
  std::shared_ptr<Exec> StartOk(StartRequest r) {
    auto e = mgr_->Start(std::move(r));
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
    return e.ok() ? *e : nullptr;
  }
  bool WaitDone(const std::shared_ptr<Exec>& e, int ms = 10000) {
    return RunUntil(
        io_, [&] { return !e->running(); }, std::chrono::milliseconds(ms));
  }

  asio::io_context io_;
  TempDir bin_, state_, ws_;
  std::unique_ptr<ExecManager> mgr_;
};

TEST_F(ExecTest, CapturesOutputAndExitCode) {
  auto e = StartOk(Req({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}));
  ASSERT_TRUE(e);
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().outcome.state, ExecState::kExited);
  EXPECT_EQ(e->info().outcome.exit_code, 3);
  nlohmann::json j = e->ToJson(true);
  EXPECT_EQ(j["status"], "exited");
  EXPECT_EQ(j["stdout"], "out\n");
  EXPECT_EQ(j["stderr"], "err\n");
  EXPECT_EQ(j["offsets"]["stdout"], 4);
  EXPECT_EQ(j["truncated"], false);
  // Replay by offset.
  EXPECT_EQ(*e->Read(Stream::kStdout, 1, 100), "ut\n");
  EXPECT_EQ(*e->Read(Stream::kStdout, 100, 100), "");
}

TEST_F(ExecTest, LabelsNameTheSandboxAndTheExec) {
  auto e = StartOk(Req({"__labels__"}));
  ASSERT_TRUE(WaitDone(e));
  std::string out = *e->Read(Stream::kStdout, 0, 1000);
  EXPECT_NE(out.find("sandbox=sb-0000000000000001"), std::string::npos) << out;
  EXPECT_NE(out.find("exec=" + e->id()), std::string::npos) << out;
}

TEST_F(ExecTest, StdinDataThenEof) {
  auto r = Req({"/bin/cat"});
  r.stdin_data = "from stdin";
  auto e = StartOk(std::move(r));
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->ToJson(true)["stdout"], "from stdin");
  EXPECT_EQ(e->info().outcome.exit_code, 0);
}

TEST_F(ExecTest, StdinKeptOpenForWriteStdin) {
  auto r = Req({"/bin/cat"});
  r.stdin_open = true;
  auto e = StartOk(std::move(r));
  std::string seen;
  e->Subscribe([&](Stream, uint64_t, std::string_view d) { seen.append(d); }, nullptr);
  ASSERT_TRUE(e->WriteStdin("one ", false).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return seen == "one "; }));
  EXPECT_TRUE(e->running());
  ASSERT_TRUE(e->WriteStdin("two", true).ok());
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(seen, "one two");
  EXPECT_FALSE(e->WriteStdin("late", false).ok());
}

TEST_F(ExecTest, SubscribersSeeOutputWithOffsetsAndTheExit) {
  auto e = StartOk(Req({"/bin/sh", "-c", "printf abc; sleep 0.1; printf def"}));
  std::string seen;
  uint64_t expect_offset = 0;
  bool offsets_ok = true, exited = false;
  e->Subscribe(
      [&](Stream s, uint64_t off, std::string_view d) {
        if (s != Stream::kStdout) return;
        offsets_ok = offsets_ok && off == expect_offset;
        expect_offset += d.size();
        seen.append(d);
      },
      [&] { exited = true; });
  ASSERT_TRUE(RunUntil(io_, [&] { return exited; }));
  EXPECT_EQ(seen, "abcdef");
  EXPECT_TRUE(offsets_ok);
  // Subscribing after the end still tells of the end.
  bool late = false;
  e->Subscribe(nullptr, [&] { late = true; });
  EXPECT_TRUE(RunUntil(io_, [&] { return late; }));
}

TEST_F(ExecTest, OutputPastTheCapIsDroppedAndCounted) {
  auto r = Req({"/bin/sh", "-c", "head -c 100000 /dev/zero"});
  r.max_output_bytes = 1000;
  auto e = StartOk(std::move(r));
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().size[0], 1000u);
  EXPECT_EQ(e->info().dropped[0], 99000u);
  EXPECT_EQ(e->ToJson(false)["truncated"], true);
  EXPECT_EQ(e->info().outcome.exit_code, 0);
}

TEST_F(ExecTest, TimeoutEndsTheCommandAsTimedOut) {
  auto r = Req({"/bin/sleep", "30"});
  r.timeout_ms = 200;
  auto start = std::chrono::steady_clock::now();
  auto e = StartOk(std::move(r));
  ASSERT_TRUE(WaitDone(e, 5000));
  EXPECT_EQ(e->info().outcome.state, ExecState::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ExecTest, TimeoutEscalatesToKillWhenTermIsIgnored) {
  auto r = Req({"/bin/sh", "-c", "trap '' TERM; sleep 30"});
  r.timeout_ms = 100;
  auto e = StartOk(std::move(r));
  ASSERT_TRUE(WaitDone(e, 5000));
  EXPECT_EQ(e->info().outcome.state, ExecState::kTimedOut);
}

TEST_F(ExecTest, TermIsForwardedAndKillEndsTheRunner) {
  auto e = StartOk(Req({"/bin/sleep", "30"}));
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(100));
  ASSERT_TRUE(e->Signal(SIGTERM).ok());
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().outcome.state, ExecState::kExited);
  EXPECT_EQ(e->info().outcome.signal, SIGTERM);

  auto k = StartOk(Req({"/bin/sleep", "30"}));
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(100));
  ASSERT_TRUE(k->Signal(SIGKILL).ok());
  ASSERT_TRUE(WaitDone(k));
  EXPECT_EQ(k->info().outcome.state, ExecState::kExited);
  EXPECT_EQ(k->info().outcome.signal, SIGKILL);
  EXPECT_FALSE(k->Signal(SIGTERM).ok());  // it has ended

  auto s = StartOk(Req({"/bin/sleep", "1"}));
  EXPECT_FALSE(s->Signal(SIGSTOP).ok());  // would stop `ward run` itself
  ASSERT_TRUE(WaitDone(s));
}

TEST_F(ExecTest, RunnerDyingWithoutStatusIsInterrupted) {
  auto e = StartOk(Req({"__die__"}));
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().outcome.state, ExecState::kInterrupted);
  EXPECT_FALSE(e->info().outcome.exit_code.has_value());
  EXPECT_EQ(e->ToJson(false)["exit_code"], nullptr);
}

TEST_F(ExecTest, RefusalIsDenied) {
  auto e = StartOk(Req({"__refuse__"}));
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().outcome.state, ExecState::kDenied);
  EXPECT_EQ(e->ToJson(true)["reason"]["message"], "policy says no");
}

TEST_F(ExecTest, BinaryOutputIsKeptExactly) {
  auto e = StartOk(Req({"/bin/sh", "-c", "printf '\\377\\000\\001'"}));
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(*e->Read(Stream::kStdout, 0, 10), std::string("\xff\x00\x01", 3));
  // Inline text stays valid UTF-8.
  std::string inl = e->ToJson(true)["stdout"];
  EXPECT_EQ(inl, std::string("\xEF\xBF\xBD\x00\x01", 5));
}

TEST_F(ExecTest, RemoveInterruptsARunningExecAndForgetsIt) {
  auto e = StartOk(Req({"/bin/sleep", "30"}));
  std::string id = e->id();
  mgr_->Remove(id, "the sandbox was destroyed");
  ASSERT_TRUE(WaitDone(e));
  EXPECT_EQ(e->info().outcome.state, ExecState::kInterrupted);
  EXPECT_EQ(mgr_->Find(id), nullptr);
  EXPECT_EQ(mgr_->running(), 0u);
}

TEST_F(ExecTest, LimitOnRunningExecs) {
  ExecManagerConfig c = mgr_->config();
  c.max_running = 1;
  ExecManager small(io_, c);
  ASSERT_TRUE(small.Init().ok());
  auto a = small.Start(Req({"/bin/sleep", "30"}));
  ASSERT_TRUE(a.ok());
  auto b = small.Start(Req({"/bin/true"}));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::kResourceExhausted);
  small.KillAll("test over");
  EXPECT_EQ((*a)->info().outcome.state, ExecState::kInterrupted);
}

TEST_F(ExecTest, ARestartedManagerRecordsRunningExecsAsInterrupted) {
  auto done = StartOk(Req({"/bin/echo", "kept"}));
  ASSERT_TRUE(WaitDone(done));
  auto running = StartOk(Req({"/bin/sleep", "30"}));
  // Simulate a daemon that died: its record still says running.
  std::string meta = state_.path() + "/serve/execs/" + running->id() + "/meta.json";
  std::string text = testing::Slurp(meta);
  ASSERT_NE(text.find("\"running\""), std::string::npos);
  std::string copy = state_.path() + "/copy.json";
  testing::Write(copy, text);
  mgr_.reset();                                // kills it (recorded as interrupted) ...
  testing::Write(meta, testing::Slurp(copy));  // ... but pretend that record never got written

  ExecManagerConfig c;
  c.ward_binary = "/bin/false";
  c.state_dir = state_.path() + "/serve";
  ExecManager again(io_, c);
  ASSERT_TRUE(again.Init().ok());
  auto execs = again.Recover();
  ASSERT_EQ(execs.size(), 2u);
  auto r = again.Find(running->id());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->info().outcome.state, ExecState::kInterrupted);
  auto d = again.Find(done->id());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->info().outcome.exit_code, 0);
  EXPECT_EQ(*d->Read(Stream::kStdout, 0, 100), "kept\n");  // replay survives the restart
}

TEST_F(ExecTest, RecoverDropsGarbage) {
  std::string dir = state_.path() + "/serve/execs/ex-00000000000000ff";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  testing::Write(dir + "/meta.json", "{not json");
  EXPECT_TRUE(mgr_->Recover().empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace ward::api
