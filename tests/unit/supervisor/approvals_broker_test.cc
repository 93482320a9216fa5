// The broker's order of answers: live grants, standing answers, then the channels (first answer
// wins, the timeout denies); prefix widening; limits; shutdown; events; the terminal channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "approvals_test_util.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/prompt.h"

namespace ward::supervisor {
namespace {

using namespace std::chrono_literals;
using testing::DecisionBox;
using testing::EventsOfType;
using testing::EventTypes;
using testing::FakePrompter;
using testing::FileRequest;
using testing::HostRequest;
using testing::RunUntil;
using testing::ScriptedChannel;

class BrokerTest : public ::testing::Test {
 protected:
  std::shared_ptr<ApprovalBroker> Make(policy::ApprovalsPolicy p = {}) {
    BrokerOptions o;
    o.policy = std::move(p);
    o.home = "/home/u";
    auto b = ApprovalBroker::Create(io_, o, &events_);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : nullptr;
  }
  std::shared_ptr<ScriptedChannel::State> AddScripted(ApprovalBroker& b, std::string name) {
    auto st = std::make_shared<ScriptedChannel::State>();
    b.AddChannel(std::make_unique<ScriptedChannel>(std::move(name), st));
    return st;
  }
  ApprovalDecision AskAndWait(ApprovalBroker& b, ApprovalRequest r) {
    DecisionBox box;
    b.Ask(std::move(r), box.Fn());
    EXPECT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
    return box.d.value_or(ApprovalDecision{});
  }
  bool WaitAsked(ScriptedChannel::State& st, uint64_t id) {
    return RunUntil(io_, [&] { return st.asked.count(id) != 0; });
  }

  asio::io_context io_;
  MemoryEventSink events_;
};

TEST_F(BrokerTest, LiveGrantAnswersFirstWithoutAsking) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  GrantSpec s;
  s.kind = RequestKind::kFile;
  s.subject = "/data/x";
  s.scope.lifetime = Lifetime::kSession;
  ASSERT_TRUE(b->CreateGrant(s, "test").ok());
  ApprovalDecision d = AskAndWait(*b, FileRequest("/data/x"));
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.channel, "grant");
  ASSERT_TRUE(d.grant.has_value());
  EXPECT_TRUE(ch->requests.empty());
  EXPECT_EQ(EventTypes(events_), (std::vector<std::string>{"grant.create", "approval.request",
                                                           "grant.use", "approval.answer"}));
}

TEST_F(BrokerTest, StandingAnswersForPathsAndHosts) {
  policy::ApprovalsPolicy p;
  p.auto_deny = {"~/.ssh/**", "*.evil.test"};
  p.auto_allow_once = {"/project/**", "example.com"};
  p.timeout_ms = 50;
  auto b = Make(p);
  auto ch = AddScripted(*b, "socket");

  ApprovalDecision d = AskAndWait(*b, FileRequest("/home/u/.ssh/id_ed25519"));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "policy");
  EXPECT_NE(d.reason.find("~/.ssh/**"), std::string::npos);

  d = AskAndWait(*b, FileRequest("/project/src/main.cc", FileAccess::kReadWrite));
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.channel, "policy");
  EXPECT_FALSE(d.grant.has_value());
  d = AskAndWait(*b, FileRequest("/project/src/main.cc"));  // answered again: no grant was made
  EXPECT_TRUE(d.allow);
  EXPECT_TRUE(b->Grants().empty());

  d = AskAndWait(*b, HostRequest("a.evil.test", 8443));  // a bare deny pattern: every port
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "policy");
  d = AskAndWait(*b, HostRequest("EXAMPLE.com", 443));
  EXPECT_TRUE(d.allow);
  EXPECT_EQ(d.channel, "policy");
  EXPECT_TRUE(ch->requests.empty());

  // A bare allow pattern means ports 80 and 443 only: 8443 goes to the channels (and times out).
  d = AskAndWait(*b, HostRequest("example.com", 8443));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "timeout");
  EXPECT_EQ(ch->requests.size(), 1u);
}

TEST_F(BrokerTest, AutoDenyWinsOverAutoAllowOnce) {
  policy::ApprovalsPolicy p;
  p.auto_deny = {"/project/.env"};
  p.auto_allow_once = {"/project/**"};
  auto b = Make(p);
  EXPECT_FALSE(AskAndWait(*b, FileRequest("/project/.env")).allow);
  EXPECT_TRUE(AskAndWait(*b, FileRequest("/project/x")).allow);
}

TEST_F(BrokerTest, BadStandingPatternsAreErrorsNamingThePattern) {
  for (std::string bad : {"~bob/.ssh", "", "*.", "exa mple.com", "host:99999"}) {
    policy::ApprovalsPolicy p;
    p.auto_deny = {bad};
    p.origin.source = "profile.toml";
    p.origin.line = 3;
    BrokerOptions o;
    o.policy = p;
    o.home = "/home/u";
    auto b = ApprovalBroker::Create(io_, o, nullptr);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().ToString().find("auto_deny"), std::string::npos) << b.status().ToString();
    EXPECT_NE(b.status().ToString().find("profile.toml"), std::string::npos)
        << b.status().ToString();
  }
  BrokerOptions o;
  o.policy.auto_allow_once = {"~/x"};  // no HOME to expand with
  EXPECT_FALSE(ApprovalBroker::Create(io_, o, nullptr).ok());
}

TEST_F(BrokerTest, NoAnswerWithinTheTimeoutDenies) {
  policy::ApprovalsPolicy p;
  p.timeout_ms = 50;
  auto b = Make(p);
  auto ch = AddScripted(*b, "socket");
  auto start = std::chrono::steady_clock::now();
  ApprovalDecision d = AskAndWait(*b, FileRequest("/slow"));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "timeout");
  EXPECT_TRUE(b->Pending().empty());
  EXPECT_EQ(ch->cancelled, std::vector<uint64_t>{1});  // the channel was told to stop asking
  // A late answer changes nothing.
  EXPECT_EQ(b->Answer(1, ChannelAnswer{true}, "socket").status().code(), Code::kNotFound);
}

TEST_F(BrokerTest, ZeroTimeoutDeniesAtOnce) {
  policy::ApprovalsPolicy p;
  p.timeout_ms = 0;
  auto b = Make(p);
  auto ch = AddScripted(*b, "socket");
  ApprovalDecision d = AskAndWait(*b, FileRequest("/x"));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "timeout");
  EXPECT_TRUE(ch->requests.empty());
}

TEST_F(BrokerTest, SessionAnswerCreatesAGrantThatCoversLaterRequests) {
  auto b = Make();
  auto ch = AddScripted(*b, "terminal");
  DecisionBox box;
  uint64_t id = b->Ask(FileRequest("/data/a.csv"), box.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  ChannelAnswer a;
  a.allow = true;
  a.scope.lifetime = Lifetime::kSession;
  ch->asked[id](a);
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  EXPECT_TRUE(box.d->allow);
  EXPECT_EQ(box.d->channel, "terminal");
  ASSERT_TRUE(box.d->grant.has_value());
  EXPECT_EQ(box.d->grant->spec.scope.lifetime, Lifetime::kSession);

  ApprovalDecision again = AskAndWait(*b, FileRequest("/data/a.csv"));
  EXPECT_TRUE(again.allow);
  EXPECT_EQ(again.channel, "grant");
  EXPECT_EQ(ch->requests.size(), 1u);  // not asked twice
  EXPECT_TRUE(b->Match(RequestKind::kFile, "/data/a.csv", FileAccess::kRead, 0).has_value());
  // Narrow: another access or path is asked again.
  EXPECT_FALSE(b->Match(RequestKind::kFile, "/data/a.csv", FileAccess::kWrite, 0).has_value());
  EXPECT_FALSE(b->Match(RequestKind::kFile, "/data/b.csv", FileAccess::kRead, 0).has_value());
}

TEST_F(BrokerTest, OnceAnswerAllowsThisRequestOnly) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  DecisionBox box;
  uint64_t id = b->Ask(FileRequest("/o"), box.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  auto r = b->Answer(id, ChannelAnswer{true}, "socket");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  EXPECT_TRUE(box.d->allow);
  ASSERT_TRUE(box.d->grant.has_value());
  EXPECT_EQ(box.d->grant->state, Grant::State::kUsed);
  EXPECT_FALSE(b->Match(RequestKind::kFile, "/o", FileAccess::kRead, 0).has_value());
  DecisionBox second;
  uint64_t id2 = b->Ask(FileRequest("/o"), second.Fn());
  EXPECT_NE(id2, id);
  EXPECT_TRUE(WaitAsked(*ch, id2));  // asked again
}

TEST_F(BrokerTest, FirstAnswerWinsAndTheOthersAreWithdrawn) {
  auto b = Make();
  auto a = AddScripted(*b, "terminal");
  auto w = AddScripted(*b, "webhook");
  DecisionBox box;
  uint64_t id = b->Ask(HostRequest("api.example.com"), box.Fn());
  ASSERT_TRUE(WaitAsked(*a, id));
  ASSERT_TRUE(w->asked.count(id));
  auto late = w->asked[id];
  a->asked[id](ChannelAnswer{false});
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  EXPECT_FALSE(box.d->allow);
  EXPECT_EQ(box.d->channel, "terminal");
  EXPECT_EQ(w->cancelled, std::vector<uint64_t>{id});
  ChannelAnswer allow;
  allow.allow = true;
  late(allow);  // after the fact: ignored
  io_.restart();
  io_.poll();
  EXPECT_TRUE(b->Grants().empty());
  EXPECT_EQ(EventsOfType(events_, "approval.answer").size(), 1u);
}

TEST_F(BrokerTest, AChannelAnsweringInsideAskDecides) {
  auto b = Make();
  auto quick = AddScripted(*b, "webhook");
  quick->immediate = ChannelAnswer{false, {}, std::nullopt, "webhook: bad signature"};
  auto slow = AddScripted(*b, "terminal");
  ApprovalDecision d = AskAndWait(*b, FileRequest("/q"));
  EXPECT_FALSE(d.allow);
  EXPECT_EQ(d.channel, "webhook");
  EXPECT_EQ(d.reason, "webhook: bad signature");
  EXPECT_TRUE(slow->requests.empty());  // never bothered
}

TEST_F(BrokerTest, FilePrefixWidening) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  DecisionBox box;
  uint64_t id = b->Ask(FileRequest("/data/in/2026/a.csv"), box.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  ChannelAnswer a;
  a.allow = true;
  a.scope.lifetime = Lifetime::kSession;
  a.prefix = "/data/other";
  EXPECT_EQ(b->Answer(id, a, "socket").status().code(), Code::kInvalidArgument);
  a.prefix = "relative";
  EXPECT_EQ(b->Answer(id, a, "socket").status().code(), Code::kInvalidArgument);
  a.prefix = "/";
  EXPECT_EQ(b->Answer(id, a, "socket").status().code(), Code::kInvalidArgument);
  a.prefix = "/data/in/../../";  // normalises to /
  EXPECT_EQ(b->Answer(id, a, "socket").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(b->Pending().size(), 1u);  // still pending after bad answers
  a.prefix = "/data/in";
  auto r = b->Answer(id, a, "socket");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->grant.has_value());
  EXPECT_EQ(r->grant->spec.match, SubjectMatch::kPathPrefix);
  EXPECT_EQ(r->grant->spec.subject, "/data/in");
  EXPECT_TRUE(b->Match(RequestKind::kFile, "/data/in/x/y", FileAccess::kRead, 0).has_value());
  EXPECT_FALSE(b->Match(RequestKind::kFile, "/data/inbox", FileAccess::kRead, 0).has_value());
}

TEST_F(BrokerTest, DefaultPrefixIsTheParentDirectoryButNeverTheRoot) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  DecisionBox top;
  uint64_t id = b->Ask(FileRequest("/toplevel"), top.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  ChannelAnswer a;
  a.allow = true;
  a.prefix = "";
  EXPECT_EQ(b->Answer(id, a, "socket").status().code(), Code::kInvalidArgument);
  DecisionBox deep;
  uint64_t id2 = b->Ask(FileRequest("/data/x/f"), deep.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id2));
  auto r = b->Answer(id2, a, "socket");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grant->spec.subject, "/data/x");
}

TEST_F(BrokerTest, HostPrefixWidening) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  std::deque<DecisionBox> boxes;
  auto ask = [&](std::string host) {
    boxes.emplace_back();
    uint64_t id = b->Ask(HostRequest(std::move(host)), boxes.back().Fn());
    EXPECT_TRUE(WaitAsked(*ch, id));
    return id;
  };
  ChannelAnswer a;
  a.allow = true;
  a.scope.lifetime = Lifetime::kSession;
  a.prefix = "";
  uint64_t apex = ask("example.com");
  EXPECT_EQ(b->Answer(apex, a, "socket").status().code(), Code::kInvalidArgument);  // *.com
  uint64_t addr = ask("10.0.0.1");
  EXPECT_EQ(b->Answer(addr, a, "socket").status().code(), Code::kInvalidArgument);
  uint64_t api = ask("api.eu.example.com");
  a.prefix = "*.evil.test";
  EXPECT_EQ(b->Answer(api, a, "socket").status().code(), Code::kInvalidArgument);
  a.prefix = "*.api.eu.example.com";  // does not match the host itself
  EXPECT_EQ(b->Answer(api, a, "socket").status().code(), Code::kInvalidArgument);
  a.prefix = "*.example.com";
  auto r = b->Answer(api, a, "socket");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->grant->spec.subject, "*.example.com");
  EXPECT_TRUE(b->Match(RequestKind::kHost, "other.example.com", FileAccess::kRead, 443));
  EXPECT_FALSE(b->Match(RequestKind::kHost, "example.com", FileAccess::kRead, 443));
  EXPECT_FALSE(b->Match(RequestKind::kHost, "other.example.com", FileAccess::kRead, 80));
  b->Shutdown();
  EXPECT_TRUE(RunUntil(io_, [&] {
    return std::all_of(boxes.begin(), boxes.end(), [](const DecisionBox& x) { return x.d; });
  }));
}

TEST_F(BrokerTest, TooManyPendingQuestionsAreDeniedAtOnce) {
  BrokerOptions o;
  o.max_pending = 2;
  auto b = *ApprovalBroker::Create(io_, o, &events_);
  auto ch = AddScripted(*b, "socket");
  DecisionBox one, two, three;
  b->Ask(FileRequest("/1"), one.Fn());
  b->Ask(FileRequest("/2"), two.Fn());
  b->Ask(FileRequest("/3"), three.Fn());
  ASSERT_TRUE(RunUntil(io_, [&] { return three.d.has_value(); }));
  EXPECT_FALSE(three.d->allow);
  EXPECT_EQ(three.d->channel, "broker");
  EXPECT_FALSE(one.d.has_value());
  EXPECT_EQ(b->Pending().size(), 2u);
  b->Shutdown();
  ASSERT_TRUE(RunUntil(io_, [&] { return one.d && two.d; }));
  EXPECT_FALSE(one.d->allow);
  EXPECT_EQ(one.d->reason, "the session is ending");
  ApprovalDecision after = AskAndWait(*b, FileRequest("/4"));
  EXPECT_FALSE(after.allow);
  EXPECT_EQ(after.reason, "the session is ending");
}

TEST_F(BrokerTest, InvalidSubjectsAreDeniedWithoutAsking) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  for (std::string bad : {std::string("relative/path"), std::string(""), std::string("/a\0b", 4),
                          "/" + std::string(10000, 'x')}) {
    ApprovalDecision d = AskAndWait(*b, FileRequest(bad));
    EXPECT_FALSE(d.allow);
    EXPECT_EQ(d.channel, "broker");
  }
  ApprovalDecision d = AskAndWait(*b, HostRequest("bad host\r\nX: y"));
  EXPECT_FALSE(d.allow);
  EXPECT_TRUE(ch->requests.empty());
  for (const Event& e : EventsOfType(events_, "approval.request")) {
    EXPECT_LE(e.data["subject"].get<std::string>().size(), 4100u);  // bounded in the trail
  }
}

TEST_F(BrokerTest, AnswerForAnUnknownRequestIsNotFound) {
  auto b = Make();
  EXPECT_EQ(b->Answer(12345, ChannelAnswer{true}, "socket").status().code(), Code::kNotFound);
}

TEST_F(BrokerTest, AskFromAnotherThreadRunsTheCallbackOnTheLoop) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  GrantSpec s;
  s.kind = RequestKind::kFile;
  s.subject = "/t";
  s.scope.lifetime = Lifetime::kSession;
  ASSERT_TRUE(b->CreateGrant(s, "t").ok());
  std::thread::id cb_thread;
  std::atomic<bool> done{false};
  std::thread asker([&] {
    b->Ask(FileRequest("/t"), [&](const ApprovalDecision& d) {
      EXPECT_TRUE(d.allow);
      cb_thread = std::this_thread::get_id();
      done = true;
    });
  });
  asker.join();
  ASSERT_TRUE(RunUntil(io_, [&] { return done.load(); }));
  EXPECT_EQ(cb_thread, std::this_thread::get_id());
}

TEST_F(BrokerTest, ABrokerGoneBeforeTheLoopRanStillAnswersDeny) {
  auto b = Make();
  DecisionBox box;
  b->Ask(FileRequest("/x"), box.Fn());
  b.reset();
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  EXPECT_FALSE(box.d->allow);
}

TEST_F(BrokerTest, EventsTellTheWholeStory) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  DecisionBox box;
  uint64_t id = b->Ask(FileRequest("/data/a", FileAccess::kWrite), box.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  ChannelAnswer a;
  a.allow = true;
  a.scope = *ParseScope("10m");
  ASSERT_TRUE(b->Answer(id, a, "socket").ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  uint64_t gid = box.d->grant->id;
  EXPECT_TRUE(b->Match(RequestKind::kFile, "/data/a", FileAccess::kWrite, 0).has_value());
  ASSERT_TRUE(b->Revoke(gid, "socket").ok());
  EXPECT_EQ(EventTypes(events_),
            (std::vector<std::string>{"approval.request", "grant.create", "approval.answer",
                                      "grant.use", "grant.revoke"}));
  auto req = EventsOfType(events_, "approval.request")[0].data;
  EXPECT_EQ(req["id"], id);
  EXPECT_EQ(req["kind"], "file");
  EXPECT_EQ(req["subject"], "/data/a");
  EXPECT_EQ(req["access"], "write");
  EXPECT_EQ(req["pid"], 42);
  EXPECT_EQ(req["exe"], "/usr/bin/cat");
  auto ans = EventsOfType(events_, "approval.answer")[0].data;
  EXPECT_EQ(ans["decision"], "allow");
  EXPECT_EQ(ans["channel"], "socket");
  EXPECT_EQ(ans["scope"], "10m");
  EXPECT_EQ(ans["grant"], gid);
  auto created = EventsOfType(events_, "grant.create")[0].data;
  EXPECT_EQ(created["request"], id);
  EXPECT_FALSE(created["expires"].is_null());
}

// --- the terminal channel ------------------------------------------------------------------

TEST_F(BrokerTest, PromptAsksOneQuestionAtATime) {
  auto b = Make();
  FakePrompter prompter;
  b->AddChannel(std::make_unique<PromptChannel>(&prompter));
  DecisionBox first, second;
  b->Ask(FileRequest("/p/1"), first.Fn());
  b->Ask(HostRequest("example.com", 443), second.Fn());
  ASSERT_TRUE(RunUntil(io_, [&] { return prompter.showing(); }));
  io_.restart();
  io_.poll();
  ASSERT_EQ(prompter.questions.size(), 1u);
  EXPECT_NE(prompter.questions[0].find("/p/1"), std::string::npos);
  EXPECT_NE(prompter.instructions.find(prompter.code()), std::string::npos);
  prompter.Type(prompter.code() + "s");
  ASSERT_TRUE(RunUntil(io_, [&] { return first.d.has_value() && prompter.showing(); }));
  EXPECT_TRUE(first.d->allow);
  EXPECT_EQ(first.d->channel, "terminal");
  EXPECT_EQ(first.d->grant->spec.scope.lifetime, Lifetime::kSession);
  ASSERT_EQ(prompter.questions.size(), 2u);
  EXPECT_NE(prompter.questions[1].find("example.com port 443"), std::string::npos);
  EXPECT_NE(prompter.codes[1], prompter.codes[0]);  // fresh for every question (1 in 10^4 not)
  prompter.Type("n");
  ASSERT_TRUE(RunUntil(io_, [&] { return second.d.has_value(); }));
  EXPECT_FALSE(second.d->allow);
}

TEST_F(BrokerTest, PromptIsWithdrawnWhenAnsweredElsewhere) {
  auto b = Make();
  FakePrompter prompter;
  b->AddChannel(std::make_unique<PromptChannel>(&prompter));
  DecisionBox box;
  uint64_t id = b->Ask(FileRequest("/w"), box.Fn());
  ASSERT_TRUE(RunUntil(io_, [&] { return prompter.showing(); }));
  ASSERT_TRUE(b->Answer(id, ChannelAnswer{false}, "socket").ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  io_.restart();
  io_.poll();
  EXPECT_EQ(prompter.cancels, 1);
  EXPECT_FALSE(prompter.showing());
  EXPECT_EQ(box.d->channel, "socket");
}

// Only the question's own code allows; the old one-key answer and a near miss deny.
TEST_F(BrokerTest, PromptAnswers) {
  policy::ApprovalsPolicy p;
  p.timeout_ms = 100;
  auto b = Make(p);
  FakePrompter prompter;
  b->AddChannel(std::make_unique<PromptChannel>(&prompter));
  enum Typed { kCode, kY, kNearMiss, kEmpty, kNone };
  struct Case {
    Typed typed;
    bool allow;
    std::string channel;
  };
  int n = 0;
  for (const Case& c : {Case{kCode, true, "terminal"}, Case{kY, false, "terminal"},
                        Case{kNearMiss, false, "terminal"}, Case{kEmpty, false, "terminal"},
                        Case{kNone, false, "timeout"}}) {
    DecisionBox box;
    b->Ask(FileRequest("/k/" + std::to_string(n++)), box.Fn());
    ASSERT_TRUE(RunUntil(io_, [&] { return prompter.showing(); }));
    std::string code = prompter.code();
    ASSERT_EQ(code.size(), 4u);
    std::string near = code;
    near[3] = near[3] == '9' ? '0' : static_cast<char>(near[3] + 1);
    switch (c.typed) {
      case kCode:
        prompter.Type(code);
        break;
      case kY:
        prompter.Type("y");
        break;
      case kNearMiss:
        prompter.Type(near);
        break;
      case kEmpty:
        prompter.Type("");
        break;
      case kNone:
        prompter.Type(std::nullopt);
        break;
    }
    ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
    EXPECT_EQ(box.d->allow, c.allow) << c.typed;
    EXPECT_EQ(box.d->channel, c.channel) << c.typed;
    if (c.typed == kCode) {
      EXPECT_EQ(box.d->grant->spec.scope.lifetime, Lifetime::kOnce);
    }
  }
}

TEST_F(BrokerTest, PromptQuestionIsSafeForTheTerminal) {
  ApprovalRequest r = FileRequest("/tmp/\x1b]0;pwned\x07\x1b[2J\u202egnp.exe");
  r.exe = "/bin/\x1b[31mred";
  r.id = 3;
  std::string q = PromptChannel::Question(r, 60s);
  EXPECT_EQ(q.find('\x1b'), std::string::npos) << q;
  EXPECT_EQ(q.find('\x07'), std::string::npos) << q;
  EXPECT_EQ(q.find("\u202e"), std::string::npos) << q;
  EXPECT_NE(q.find("request 3"), std::string::npos);
  EXPECT_NE(q.find("60 s"), std::string::npos);
  // A long subject keeps its end visible.
  ApprovalRequest longr = FileRequest("/" + std::string(5000, 'a') + "/secret.key");
  std::string lq = PromptChannel::Question(longr, 60s);
  EXPECT_LT(lq.size(), 1000u);
  EXPECT_NE(lq.find("secret.key"), std::string::npos);
}

TEST_F(BrokerTest, ARequestGrantCoversItsMethodAndPathPrefixOnly) {
  auto b = Make();
  auto ch = AddScripted(*b, "socket");
  ApprovalRequest req;
  req.kind = RequestKind::kRequest;
  req.subject = "API.test";
  req.port = 443;
  req.method = "DELETE";
  req.path = "/repos/acme/app?force=1";
  DecisionBox box;
  uint64_t id = b->Ask(req, box.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id));
  ChannelAnswer a;
  a.allow = true;
  a.scope.lifetime = Lifetime::kSession;
  a.prefix = std::string();  // the default: the path's directory
  ASSERT_TRUE(b->Answer(id, a, "socket").ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return box.d.has_value(); }));
  ASSERT_TRUE(box.d->allow);
  EXPECT_EQ(box.d->grant->spec.match, SubjectMatch::kRequestPrefix);
  EXPECT_EQ(box.d->grant->spec.path, "/repos/acme/");
  EXPECT_TRUE(b->MatchRequest("api.test", 443, "DELETE", "/repos/acme/other").has_value());
  EXPECT_FALSE(b->MatchRequest("api.test", 443, "PUT", "/repos/acme/other").has_value());
  EXPECT_FALSE(b->MatchRequest("api.test", 443, "DELETE", "/repos/other").has_value());
  EXPECT_FALSE(b->MatchRequest("api.test", 443, "DELETE", "/repos/acme-evil/x").has_value());
  EXPECT_FALSE(b->MatchRequest("api.test", 8443, "DELETE", "/repos/acme/x").has_value());
  EXPECT_FALSE(b->MatchRequest("other.test", 443, "DELETE", "/repos/acme/x").has_value());
  // A host grant does not cover a request, nor the other way round.
  EXPECT_FALSE(b->Match(RequestKind::kHost, "api.test", FileAccess::kRead, 443).has_value());
  // A prefix that is not the request's is refused; the request stays pending.
  DecisionBox second;
  req.path = "/repos/zeta/x";
  uint64_t id2 = b->Ask(req, second.Fn());
  ASSERT_TRUE(WaitAsked(*ch, id2));
  a.prefix = std::string("/repos/acme/");
  EXPECT_FALSE(b->Answer(id2, a, "socket").ok());
  GrantSpec bad;
  bad.kind = RequestKind::kRequest;
  bad.match = SubjectMatch::kRequestPrefix;
  bad.subject = "api.test";
  bad.path = "repos";
  EXPECT_FALSE(b->CreateGrant(bad, "test", 0).ok());
  bad.path = "/";
  bad.method = "DELETE";
  EXPECT_FALSE(b->CreateGrant(bad, "test", 0).ok());  // every path is no prefix
}

}  // namespace
}  // namespace ward::supervisor
