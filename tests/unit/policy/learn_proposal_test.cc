// `ward learn`'s proposal (policy/learn.h): grouping, comments, the denials refused on purpose
// never proposed, hosts with ports, paths with ~, and a proposal the loader accepts as it is.
#include "policy/learn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy_test_util.h"

namespace ward::policy {
namespace {

using ::testing::HasSubstr;
using testing::kHome;
using testing::kWorkspace;
using ::testing::Not;

LearnDenial D(std::string kind, std::string target, uint64_t count, std::string allow_with,
              bool on_purpose = false, std::string rule = "") {
  return LearnDenial{std::move(kind), std::move(target),     count,
                     std::move(rule), std::move(allow_with), on_purpose};
}

LearnInput In(std::vector<LearnDenial> denials) {
  LearnInput in;
  in.denials = std::move(denials);
  in.command = {"make", "test"};
  in.home = kHome;
  in.cwd = kWorkspace;
  return in;
}

TEST(LearnProposal, OneHostFromTheProxyAndTheStubIsOneLineWithBothCounted) {
  LearnInput in = In({D("network", "registry.example.org:443", 3, "-n registry.example.org"),
                      D("dns", "registry.example.org", 1, "-n registry.example.org")});
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].value, "registry.example.org");
  EXPECT_EQ(p.rules[0].count, 4u);
  EXPECT_EQ(ProposalProfileText(p, in),
            "# Proposed by `ward learn` after one run of: make test\n"
            "# Each rule was needed by that run; the comment after it says what needed it and how\n"
            "# often. Read them before you use it: ward run -p THIS_FILE -- make test\n"
            "extends = \"default\"\n"
            "\n"
            "[network]\n"
            "allow = [\n"
            "  \"registry.example.org\",  # network registry.example.org:443 (3 times); dns "
            "registry.example.org (once)\n"
            "]\n");
  EXPECT_EQ(ProposalFlags(p, in), "ward run -n registry.example.org -- make test");
}

TEST(LearnProposal, AHostOnAnotherPortKeepsItsPort) {
  LearnInput in = In({D("network", "git.example.org:8443", 2, "-n git.example.org:8443"),
                      D("network", "git.example.org:443", 1, "-n git.example.org")});
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_EQ(p.rules[0].value, "git.example.org:8443");
  EXPECT_EQ(p.rules[1].value, "git.example.org");
  EXPECT_EQ(ProposalFlags(p, in),
            "ward run -n git.example.org:8443 -n git.example.org -- make test");
}

TEST(LearnProposal, PathsBelowHomeAreWrittenWithTildeAndCoveredOnesMerge) {
  LearnInput in = In({D("file.write", "/home/u/.cache/pip/http/a", 5, "-w /home/u/.cache/pip"),
                      D("file.write", "/home/u/.cache/pip/wheels/b", 1, "-w ~/.cache/pip/wheels"),
                      D("file.read", "/home/u/.cache/pip/selfcheck.json", 2, "-r ~/.cache/pip"),
                      D("command", "cargo", 1, "-r ~/.cargo")});
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_EQ(p.rules[0].key, "read");
  EXPECT_EQ(p.rules[0].value, "~/.cargo");
  EXPECT_EQ(p.rules[1].key, "write");
  EXPECT_EQ(p.rules[1].value, "~/.cache/pip");
  EXPECT_EQ(p.rules[1].count, 8u);
  EXPECT_EQ(p.rules[1].needed_by.size(), 3u);
  const std::string text = ProposalProfileText(p, in);
  EXPECT_THAT(text, HasSubstr("[filesystem]\n"
                              "read = [\n"
                              "  \"~/.cargo\",  # command cargo (once)\n"
                              "]\n"
                              "write = [\n"
                              "  \"~/.cache/pip\",  # file.write /home/u/.cache/pip/http/a (5 "
                              "times); file.read /home/u/.cache/pip/selfcheck.json (twice); "
                              "file.write /home/u/.cache/pip/wheels/b (once)\n"
                              "]\n"));
  EXPECT_EQ(ProposalFlags(p, in), "ward run -r ~/.cargo -w ~/.cache/pip -- make test");
}

TEST(LearnProposal, ARelativePathIsTheCallersDirectorysAndTooWideOnesAreNotProposed) {
  LearnInput in =
      In({D("file.write", "/home/u/proj/out/x", 1, "-w out"), D("file.read", "/etc/x", 1, "-r /"),
          D("file.read", "/home/u/x", 1, "-r ~"), D("file.read", "/proc/1/mem", 1, "-r /proc/1")});
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].value, "~/proj/out");
  ASSERT_EQ(p.not_proposable.size(), 3u);
  EXPECT_EQ(p.not_proposable[0].why, "it would show the whole file system");
  EXPECT_EQ(p.not_proposable[1].why, "it would show all of HOME");
  EXPECT_EQ(p.not_proposable[2].why, "/proc and /dev are the sandbox's own");
}

TEST(LearnProposal, DenialsRefusedOnPurposeAreNamedWithTheirRuleAndNeverProposed) {
  // Even with an allow_with: on_purpose decides.
  LearnInput in =
      In({D("file.read", "/home/u/.ssh/id_ed25519", 2, "-r ~/.ssh", true, "filesystem.deny ~/.ssh"),
          D("protected", "/home/u/proj/.git/hooks/pre-commit", 1, "", true, "protected .git/hooks"),
          D("network", "evil.example:443", 1, "", true, "network.deny evil.example"),
          D("credential", "api.example.com", 1, "", true,
            "the phantom of credential github sent to another host")});
  LearnProposal p = ProposeFromDenials(in);
  EXPECT_TRUE(p.empty());
  ASSERT_EQ(p.on_purpose.size(), 4u);
  const std::string text = ProposalProfileText(p, in);
  EXPECT_THAT(text, HasSubstr("\n# Needed, refused on purpose (ward learn never proposes these):\n"
                              "#   file.read /home/u/.ssh/id_ed25519 (twice): filesystem.deny "
                              "~/.ssh\n"));
  EXPECT_THAT(text, HasSubstr("#   protected /home/u/proj/.git/hooks/pre-commit (once): "
                              "protected .git/hooks\n"));
  EXPECT_THAT(text, Not(HasSubstr("\"~/.ssh\"")));
  EXPECT_EQ(ProposalFlags(p, in), "ward run -- make test");
}

// A denial the aggregator did not mark: the run's own deny list still keeps it out.
TEST(LearnProposal, APathTheDenyListCoversIsRefusedOnPurposeWhateverTheDenialSays) {
  LearnInput in =
      In({D("file.read", "/home/u/.aws/config", 1, "-r ~/.aws"),
          D("file.read", "/etc/ssh/ssh_host_ed25519_key", 1, "-r /etc/ssh/ssh_host_ed25519_key"),
          D("file.read", "/etc/ssh/ssh_config", 1, "-r /etc/ssh/ssh_config")});
  in.deny_paths = {"/home/u/.aws", "/etc/ssh/ssh_host_*_key"};
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].value, "/etc/ssh/ssh_config");
  ASSERT_EQ(p.on_purpose.size(), 2u);
  EXPECT_EQ(p.on_purpose[0].why, "filesystem.deny /etc/ssh/ssh_host_*_key");
  EXPECT_EQ(p.on_purpose[1].why, "filesystem.deny /home/u/.aws");
}

// A run can ask for anything by failing at it: a write where the host takes what it runs from
// is listed, never proposed. Reading there is proposed as usual.
TEST(LearnProposal, AWriteWhereTheHostRunsProgramsIsNeverProposed) {
  LearnInput in =
      In({D("file.write", "/etc/cron.d/x", 1, "-w /etc/cron.d"),
          D("file.write", "/usr/local/bin/x", 1, "-w /usr/local/bin"),
          D("file.write", "/home/u/.local/bin/x", 1, "-w ~/.local/bin"),
          D("file.write", "/home/u/.config/autostart/x.desktop", 1, "-w /home/u/.config/autostart"),
          D("command", "tool", 1, "-r ~/.local/bin")});
  LearnProposal p = ProposeFromDenials(in);
  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].key, "read");
  EXPECT_EQ(p.rules[0].value, "~/.local/bin");
  ASSERT_EQ(p.not_proposable.size(), 4u);
  EXPECT_EQ(p.not_proposable[0].why,
            "a write under /etc changes what the host runs; ward learn does not propose it (add "
            "it yourself if you mean it)");
  EXPECT_THAT(p.not_proposable[3].why, HasSubstr("a write under /usr changes what the host runs"));
  EXPECT_THAT(p.not_proposable[1].why, HasSubstr("a write under ~/.config/autostart "));
  EXPECT_THAT(p.not_proposable[2].why, HasSubstr("a write under ~/.local/bin "));
}

TEST(LearnProposal, DenialsWithoutASuggestionAreListedNotGuessed) {
  LearnInput in = In({D("syscall", "ptrace", 4, "", false, "syscall.deny ptrace"),
                      D("file.read", "/x", 1, "--privileged /x"),
                      D("network", "*.example.org:443", 1, "-n *.example.org"),
                      D("network", "10.0.0.0/8:443", 1, "-n 10.0.0.0/8")});
  LearnProposal p = ProposeFromDenials(in);
  EXPECT_TRUE(p.empty());
  ASSERT_EQ(p.not_proposable.size(), 4u);
  EXPECT_EQ(p.not_proposable[0].why, "syscall.deny ptrace; ward suggests no flag for it");
  EXPECT_EQ(p.not_proposable[1].why,
            "its suggestion --privileged is not a flag ward learn writes into a profile");
  EXPECT_EQ(p.not_proposable[2].why, "it is a pattern or an address range, not one host");
}

TEST(LearnProposal, NamesFromTheRunCannotBreakTheFileOrReachTheTerminal) {
  LearnInput in = In({D("dns", "a\"b\nc\x1b[2J", 1, "-n 'a\"b'"),
                      D("file.write", "/tmp/\x1b]52;c;x\x07", 1, "", false, "read-only\nx")});
  LearnProposal p = ProposeFromDenials(in);
  EXPECT_TRUE(p.empty());
  const std::string text = ProposalProfileText(p, in);
  EXPECT_THAT(text, HasSubstr("#   dns a\"b\\x0ac\\x1b[2J (once): the value of -n has characters "
                              "ward learn does not write for you\n"));
  EXPECT_THAT(text, HasSubstr("#   file.write /tmp/\\x1b]52;c;x\\x07 (once): read-only\\x0ax; "
                              "ward suggests no flag for it\n"));
  for (char c : text) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << int(c);
}

TEST(LearnProposal, LimitsAndFlagsWithEqualsSigns) {
  LearnInput in =
      In({D("limit", "memory", 1, "--memory=16G"), D("limit", "pids", 1, "--pids 4096")});
  LearnProposal p = ProposeFromDenials(in);
  const std::string text = ProposalProfileText(p, in);
  EXPECT_THAT(text, HasSubstr("[limits]\n"
                              "memory = \"16G\"  # limit memory (once)\n"
                              "pids = 4096  # limit pids (once)\n"));
  EXPECT_EQ(ProposalFlags(p, in), "ward run --memory 16G --pids 4096 -- make test");
}

TEST(LearnProposal, TheBaseProfileAndTheCommandAreQuotedForTheShell) {
  LearnInput in = In({D("command", "cargo", 1, "-r '/opt/my tools'")});
  in.base_profile = "/home/u/my profiles/p.toml";
  in.command = {"sh", "-c", "echo 'hi' && cargo build"};
  LearnProposal p = ProposeFromDenials(in);
  EXPECT_EQ(ProposalFlags(p, in),
            "ward run -p '/home/u/my profiles/p.toml' -r '/opt/my tools' -- sh -c 'echo "
            "'\\''hi'\\'' && cargo build'");
  EXPECT_THAT(ProposalProfileText(p, in), HasSubstr("extends = \"/home/u/my profiles/p.toml\"\n"));
}

// What `--write` saves is a profile `-p FILE` accepts, with the base's rules and the new ones.
TEST(LearnProposal, TheProposedProfileLoadsAndGrantsWhatItProposes) {
  LearnInput in =
      In({D("network", "registry.example.org:443", 3, "-n registry.example.org"),
          D("network", "git.example.org:8443", 1, "-n git.example.org:8443"),
          D("command", "cargo", 1, "-r /opt/tools/bin"),
          D("file.write", "/home/u/.cache/pip/x", 2, "-w ~/.cache/pip"),
          D("limit", "pids", 1, "--pids 2048"),
          D("file.read", "/home/u/.ssh/id_ed25519", 1, "", true, "filesystem.deny ~/.ssh")});
  LearnProposal p = ProposeFromDenials(in);
  testing::MemFs fs;
  fs.AddProfile("learned", ProposalProfileText(p, in));
  RunFlags flags;
  flags.profile = "learned";
  Result<Policy> pol = testing::Load(fs, flags);
  ASSERT_TRUE(pol.ok()) << pol.status().ToString() << "\n" << ProposalProfileText(p, in);
  auto has_path = [&](const std::string& path, Access a) {
    for (const PathRule& r : pol->paths) {
      if (r.path == path && r.access == a) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_path("/opt/tools/bin", Access::kRead));
  EXPECT_TRUE(has_path("/home/u/.cache/pip", Access::kWrite));
  EXPECT_TRUE(has_path("/usr", Access::kRead));  // the base's rules are still there
  std::vector<std::string> allow;
  for (const HostRule& h : pol->network.allow) allow.push_back(h.pattern);
  EXPECT_THAT(allow, ::testing::ElementsAre("registry.example.org", "git.example.org:8443"));
  EXPECT_EQ(pol->limits.pids, 2048u);
}

}  // namespace
}  // namespace ward::policy

namespace ward::policy {
namespace {

// --save FILE --force with -p FILE: the file is rewritten with its own rules (and their comments)
// ahead of the new ones, and still extends what it extended.
TEST(LearnProposal, AProfileRewrittenInPlaceKeepsItsRulesAndAddsTheNewOnes) {
  LearnInput first = In({D("network", "registry.example.org:443", 3, "-n registry.example.org"),
                         D("file.write", "/home/u/.cache/pip/x", 1, "-w ~/.cache/pip"),
                         D("limit", "pids", 1, "--pids 2048")});
  first.base_profile = "claude-code";
  const std::string text = ProposalProfileText(ProposeFromDenials(first), first);
  Result<LearnedProfile> learned = ParseLearnedProfile(text, "/home/u/p.toml");
  ASSERT_TRUE(learned.ok()) << learned.status().ToString();
  EXPECT_EQ(learned->extends, "claude-code");
  ASSERT_EQ(learned->rules.size(), 3u);
  EXPECT_EQ(learned->rules[0].kept_comment, "file.write /home/u/.cache/pip/x (once)");

  LearnInput second = In({D("network", "files.example.org:443", 1, "-n files.example.org")});
  second.base_profile = learned->extends;
  second.previous = learned->rules;
  LearnProposal p = ProposeFromDenials(second);
  EXPECT_FALSE(p.empty());
  const std::string again = ProposalProfileText(p, second);
  EXPECT_THAT(again, HasSubstr("extends = \"claude-code\"\n"
                               "\n"
                               "[filesystem]\n"
                               "write = [\n"
                               "  \"~/.cache/pip\",  # file.write /home/u/.cache/pip/x (once)\n"
                               "]\n"
                               "\n"
                               "[network]\n"
                               "allow = [\n"
                               "  \"registry.example.org\",  # network registry.example.org:443 "
                               "(3 times)\n"
                               "  \"files.example.org\",  # network files.example.org:443 (once)\n"
                               "]\n"
                               "\n"
                               "[limits]\n"
                               "pids = 2048  # limit pids (once)\n"));
  EXPECT_EQ(ProposalFlags(p, second),
            "ward run -p claude-code -w ~/.cache/pip -n registry.example.org -n files.example.org "
            "--pids 2048 -- make test");
  // Nothing new: nothing to write.
  second.denials.clear();
  EXPECT_TRUE(ProposeFromDenials(second).empty());
}

TEST(LearnProposal, AProfileWithOtherKeysIsNotRewrittenInPlace) {
  Result<LearnedProfile> l =
      ParseLearnedProfile("extends = \"default\"\n[env]\npass = [\"X\"]\n", "/p.toml");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().ToString(),
            "/p.toml: it has env, which ward learn does not rewrite; save the next step to "
            "another file (it will extend this one)");
  l = ParseLearnedProfile("[filesystem]\nread = [\"/opt\"]\n", "/p.toml");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().ToString(),
            "/p.toml: it extends no profile, which ward learn does not rewrite; save the next step "
            "to another file (it will extend this one)");
  l = ParseLearnedProfile("extends = \"default\"\n[filesystem]\ndeny = [\"/opt\"]\n", "/p.toml");
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().ToString(), HasSubstr("it has filesystem.deny, which"));
}

}  // namespace
}  // namespace ward::policy
