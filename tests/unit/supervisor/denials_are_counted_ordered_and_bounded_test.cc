// The denials model (supervisor/denials.h): events become distinct, counted entries, most
// frequent first; memory stays bounded whatever the sandbox sends; the summary is sanitised and
// capped; the trail (capped for bulk records) reads back into the same entries.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/events.h"
#include "supervisor/command_lookup.h"
#include "supervisor/denials.h"

namespace ward::supervisor {
namespace {

nlohmann::json NetDeny(const std::string& host, int port, const std::string& reason = "no_rule",
                       const std::string& rule = "") {
  return {{"host", host}, {"port", port}, {"reason", reason}, {"rule", rule}, {"origin", ""},
          {"detail", ""}, {"via", "connect"}};
}

nlohmann::json FileDeny(const std::string& path) {
  return {{"op", "openat"}, {"path", path}, {"errno", "EROFS"}, {"rule", "read-only here"}};
}

TEST(DenialOf, NetworkRefusalSuggestsTheHostOnWebPortsAndHostPortElsewhere) {
  std::optional<Denial> d = DenialOf("net.deny", NetDeny("registry.example.org", 443));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, "network");
  EXPECT_EQ(d->target, "registry.example.org:443");
  EXPECT_EQ(d->allow_with, "-n registry.example.org");
  EXPECT_EQ(d->rule, "no network.allow rule names it");
  EXPECT_FALSE(d->on_purpose);
  EXPECT_EQ(DenialOf("net.deny", NetDeny("db.example.org", 5432))->allow_with,
            "-n db.example.org:5432");
  EXPECT_EQ(DenialOf("net.deny", NetDeny("2001:db8::1", 443))->target, "[2001:db8::1]:443");
}

TEST(DenialOf, DenyListRefusalIsOnPurposeWithoutAFlag) {
  std::optional<Denial> d =
      DenialOf("net.deny", NetDeny("evil.example", 443, "deny_rule", "evil.example"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->on_purpose);
  EXPECT_EQ(d->allow_with, "");
  EXPECT_EQ(d->rule, "network.deny evil.example");
}

TEST(DenialOf, TheRecordsOwnAllowWithWins) {
  nlohmann::json data = NetDeny("x.example", 443);
  data["allow_with"] = "-n x.example --ask";
  EXPECT_EQ(DenialOf("net.deny", data)->allow_with, "-n x.example --ask");
}

// The records as the proxy and the stub write them with their own words (host normalised,
// allow_with): copied, not re-derived.
TEST(DenialOf, TheStubsNormalisedHostAndFlagAreCopied) {
  std::optional<Denial> d = DenialOf("dns.deny", {{"name", "Reg.Example.ORG."},
                                                  {"host", "reg.example.org"},
                                                  {"rcode", "NXDOMAIN"},
                                                  {"rule", ""},
                                                  {"why", "reg.example.org not allowed"},
                                                  {"allow_with", "-n reg.example.org"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->target, "reg.example.org");
  EXPECT_EQ(d->allow_with, "-n reg.example.org");
}

TEST(DenialOf, FileApprovalRefusalsAreReads) {
  std::optional<Denial> asked = DenialOf(
      "syscall.deny",
      {{"syscall", "openat"}, {"path", "/srv/data"}, {"rule", "approvals"}, {"detail", "denied"}});
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->kind, "file.read");
  EXPECT_EQ(asked->allow_with, "-r /srv/data");
  EXPECT_FALSE(asked->on_purpose);
  std::optional<Denial> listed = DenialOf(
      "syscall.deny", {{"syscall", "openat"}, {"path", "/home/u/.ssh/id"}, {"rule", "filesystem.deny"}});
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->on_purpose);
  EXPECT_EQ(listed->allow_with, "");
}

TEST(DenialOf, OnlyNxdomainIsADnsDenial) {
  EXPECT_FALSE(DenialOf("dns.deny", {{"name", "a.example"}, {"rcode", "REFUSED"}}));
  std::optional<Denial> d =
      DenialOf("dns.deny", {{"name", "a.example."}, {"rcode", "NXDOMAIN"}, {"rule", ""}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->target, "a.example");
  EXPECT_EQ(d->allow_with, "-n a.example");
}

TEST(DenialOf, ProtectedAndGuardRefusals) {
  std::optional<Denial> p = DenialOf("syscall.deny", {{"syscall", "openat"},
                                                      {"path", ".envrc"},
                                                      {"target", "/ws/.envrc"},
                                                      {"rule", "filesystem.protected"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, "protected");
  EXPECT_EQ(p->target, "/ws/.envrc");
  EXPECT_TRUE(p->on_purpose);
  std::optional<Denial> w = DenialOf("file.deny", FileDeny("/usr/lib/x y"));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, "file.write");
  EXPECT_EQ(w->allow_with, "-w /usr/lib");
  EXPECT_EQ(DenialOf("file.deny", FileDeny("/opt/my dir/f"))->allow_with, "-w '/opt/my dir'");
  nlohmann::json prot = FileDeny("/ws/.git/hooks/x");
  prot["protected"] = true;
  EXPECT_EQ(DenialOf("file.deny", prot)->kind, "protected");
  nlohmann::json perms = FileDeny("/ws/ro/x");
  perms["policy_allows"] = true;  // the file's own permissions refused it, not ward
  EXPECT_FALSE(DenialOf("file.deny", perms));
  EXPECT_FALSE(DenialOf("net.allow", NetDeny("a", 1)));
  EXPECT_FALSE(DenialOf("session.end", {}));
}

TEST(DenialTally, MostFrequentFirstThenKindThenTarget) {
  DenialTally t;
  t.AddRecord("file.deny", FileDeny("/usr/b"));
  t.AddRecord("file.deny", FileDeny("/usr/a"));
  for (int i = 0; i < 3; ++i) t.AddRecord("net.deny", NetDeny("c.example", 443));
  t.AddRecord("net.deny", NetDeny("z.example", 443));
  std::vector<Denial> s = t.Sorted();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].target, "c.example:443");
  EXPECT_EQ(s[0].count, 3u);
  EXPECT_EQ(s[1].target, "z.example:443");  // network before file.write at the same count
  EXPECT_EQ(s[2].target, "/usr/a");
  EXPECT_EQ(s[3].target, "/usr/b");
}

TEST(DenialTally, ANameTheProxyRefusedShowsUnderNetworkOnly) {
  DenialTally t;
  t.AddRecord("dns.deny", {{"name", "r.example"}, {"rcode", "NXDOMAIN"}});
  t.AddRecord("dns.deny", {{"name", "only-dns.example"}, {"rcode", "NXDOMAIN"}});
  t.AddRecord("net.deny", NetDeny("r.example", 443));
  std::vector<Denial> s = t.Sorted();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, "network");
  EXPECT_EQ(s[1].target, "only-dns.example");
}

// A hostile sandbox cannot grow the tally: distinct targets beyond the cap are counted in one
// "other" entry, and what is kept of each target is cut.
TEST(DenialTally, DistinctTargetsAndTheirLengthAreCapped) {
  DenialTally t;
  const size_t n = DenialTally::kMaxDistinct + 500;
  for (size_t i = 0; i < n; ++i) t.AddRecord("file.deny", FileDeny("/usr/f" + std::to_string(i)));
  t.AddRecord("file.deny", FileDeny("/usr/" + std::string(100000, 'x')));
  std::vector<Denial> s = t.Sorted();
  ASSERT_EQ(s.size(), DenialTally::kMaxDistinct + 1);
  EXPECT_EQ(s.back().kind, "other");
  EXPECT_EQ(s.back().count, 501u);
  for (const Denial& d : s) {
    EXPECT_LE(d.target.size(), DenialTally::kMaxText);
    EXPECT_LE(d.allow_with.size(), DenialTally::kMaxText);
  }
}

TEST(SummaryLines, TenLinesThenAndNMore) {
  DenialTally t;
  for (int i = 0; i < 13; ++i) t.AddRecord("file.deny", FileDeny("/usr/f" + std::to_string(i)));
  t.AddRecord("limit.hit", {{"limit", "memory"}});
  std::vector<std::string> lines = SummaryLines(t.Sorted(), 10, "ward audit show S --denials");
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[10], "ward: and 3 more: ward audit show S --denials");
  for (const std::string& l : lines) EXPECT_EQ(l.find("memory"), std::string::npos) << l;
  EXPECT_TRUE(SummaryLines({}, 10, "x").empty());
}

TEST(SummaryLines, WhatTheSandboxNamedIsSanitised) {
  DenialTally t;
  t.AddRecord("net.deny", NetDeny("evil\x1b]0;owned\x07\n.example", 443));
  t.AddRecord("file.deny", FileDeny("/usr/\x1b[2Jx\ny"));
  for (const std::string& l : SummaryLines(t.Sorted(), 10, "")) {
    EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
    EXPECT_EQ(l.find('\n'), std::string::npos) << l;
    EXPECT_EQ(l.find('\x07'), std::string::npos) << l;
  }
}

TEST(SummaryLines, TheWordsOfEachKind) {
  DenialTally t;
  for (int i = 0; i < 3; ++i) t.AddRecord("net.deny", NetDeny("registry.example.org", 443));
  t.AddRecord("syscall.deny", {{"syscall", "mkdir"},
                               {"path", ".git/hooks"},
                               {"target", "/ws/.git/hooks"},
                               {"rule", "filesystem.protected"}});
  t.Add(*DenialOf("command.hidden", {{"argv0", "cargo"},
                                     {"host_path", "/home/u/.cargo/bin/cargo"},
                                     {"allow_with", "-r ~/.cargo"}}));
  EXPECT_EQ(SummaryLines(t.Sorted(), 10, ""),
            (std::vector<std::string>{
                "ward: blocked 3 connections to registry.example.org:443 — allow with: -n "
                "registry.example.org",
                "ward: blocked 1 write to /ws/.git/hooks (protected) — see: ward why /ws/.git/hooks",
                "ward: 'cargo' is /home/u/.cargo/bin/cargo on the host, hidden here — add: -r "
                "~/.cargo"}));
}

// The tee passes every event on, holds back bulk records past the cap (saying how many), and the
// trail it leaves reads back into the same totals.
TEST(DenialTee, EveryEventReachesTheSinkAndTheTrailStaysBounded) {
  MemoryEventSink sink;
  DenialTee tee(&sink);
  const uint64_t n = DenialTee::kMaxRecordsPerType + 250;
  for (uint64_t i = 0; i < n; ++i) tee.Emit("file.deny", FileDeny("/usr/same"));
  tee.Emit("net.allow", {{"host", "a"}});
  std::vector<Denial> live = tee.Finish();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].count, n);
  std::vector<Event> events = sink.events();
  ASSERT_EQ(events.size(), DenialTee::kMaxRecordsPerType + 2);
  EXPECT_EQ(events[DenialTee::kMaxRecordsPerType].type, "net.allow");
  EXPECT_EQ(events.back().type, "denials.unrecorded");
  EXPECT_EQ(events.back().data["count"], 250);
  DenialTally read_back;
  for (const Event& e : events) read_back.AddRecord(e.type, e.data);
  std::vector<Denial> s = read_back.Sorted();
  uint64_t total = 0;
  for (const Denial& d : s) total += d.count;
  EXPECT_EQ(total, n);
}

TEST(DenialTee, WorksWithoutASink) {
  DenialTee tee(nullptr);
  tee.Emit("net.deny", NetDeny("a.example", 80));
  std::vector<Denial> s = tee.Finish();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].allow_with, "-n a.example");
}

// A window (a live sandbox's exec) gathers what was refused between its opening and its
// closing, besides the run's own tally; overlapping windows each get what fell in them.
TEST(DenialTee, AWindowGathersWhatWasRefusedWhileItWasOpen) {
  DenialTee tee(nullptr);
  tee.Emit("net.deny", NetDeny("before.example", 80));
  tee.OpenWindow(1);
  tee.Emit("net.deny", NetDeny("during.example", 80));
  tee.OpenWindow(2);
  tee.Emit("net.deny", NetDeny("both.example", 80));
  tee.Emit("net.deny", NetDeny("both.example", 80));
  std::vector<Denial> one = tee.CloseWindow(1, 10);
  tee.Emit("net.deny", NetDeny("after-one.example", 80));
  std::vector<Denial> two = tee.CloseWindow(2, 10);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].target, "both.example:80");
  EXPECT_EQ(one[0].count, 2u);
  EXPECT_EQ(one[1].target, "during.example:80");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].target, "both.example:80");
  EXPECT_EQ(two[1].target, "after-one.example:80");
  EXPECT_TRUE(tee.CloseWindow(1, 10).empty());  // closed already
  EXPECT_EQ(tee.Finish().size(), 4u);       // the run's own tally has everything
}

// A window's list is bounded by the caller: what is beyond goes into one "other" entry.
TEST(DenialTee, AWindowsListIsBoundedWithTheRestAsOther) {
  DenialTee tee(nullptr);
  tee.OpenWindow(7);
  tee.Emit("net.deny", NetDeny("a.example", 80));
  tee.Emit("net.deny", NetDeny("a.example", 80));
  tee.Emit("net.deny", NetDeny("b.example", 80));
  tee.Emit("net.deny", NetDeny("c.example", 80));
  std::vector<Denial> ds = tee.CloseWindow(7, 1);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].target, "a.example:80");
  EXPECT_EQ(ds[1].kind, "other");
  EXPECT_EQ(ds[1].count, 2u);
  EXPECT_FALSE(ds[1].rule.empty());
}

TEST(ReadFlagFor, TheToolsDirectory) {
  EXPECT_EQ(ReadFlagFor("/home/u/.cargo/bin/cargo", "/home/u"), "~/.cargo");
  EXPECT_EQ(ReadFlagFor("/home/u/.pyenv/shims/python", "/home/u"), "~/.pyenv");
  EXPECT_EQ(ReadFlagFor("/home/u/.local/bin/tool", "/home/u"), "~/.local/bin");
  EXPECT_EQ(ReadFlagFor("/opt/tool/bin/tool", "/home/u"), "/opt/tool");
  EXPECT_EQ(ReadFlagFor("/usr/local/bin/tool", "/home/u"), "/usr/local/bin");
}

// The figure for docs/performance.md: 10,000 refused creations in distinct paths and 10,000
// refused connections to distinct hosts, through the tee, then the summary built. Printed, not
// asserted (a loaded machine must not fail the suite); bench/denials_summary.sh measures it end
// to end.
TEST(DenialTee, TwentyThousandDenialsSummarised) {
  using Clock = std::chrono::steady_clock;
  DenialTee tee(nullptr);
  const auto t0 = Clock::now();
  for (int i = 0; i < 10000; ++i) {
    tee.Emit("file.deny", FileDeny("/usr/share/refused/" + std::to_string(i)));
    tee.Emit("net.deny", NetDeny("host" + std::to_string(i) + ".example", 443));
  }
  const auto t1 = Clock::now();
  std::vector<Denial> s = tee.Finish();
  std::vector<std::string> lines = SummaryLines(s, 10, "ward audit show S --denials");
  const auto t2 = Clock::now();
  ASSERT_EQ(lines.size(), 11u);
  std::printf("denials: 20000 events gathered in %.2f ms; summary built in %.2f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
}

}  // namespace
}  // namespace ward::supervisor
