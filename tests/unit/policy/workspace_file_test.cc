// .ward.toml: the workspace file may only narrow the policy.
#include <gtest/gtest.h>

#include <algorithm>

#include "policy/loader.h"
#include "policy_test_util.h"

namespace ward::policy {
namespace {

using testing::ErrorOf;
using ::testing::HasSubstr;
using testing::MemFs;

const std::string kFile = std::string(testing::kWorkspace) + "/.ward.toml";

// The default profile plus limits, with `text` as the workspace file.
Result<Policy> WithWorkspaceFile(const std::string& text, RunFlags flags = RunFlags()) {
  MemFs fs;
  fs.AddProfile("t", R"(extends = "builtin:default"
[limits]
memory = "8G"
pids = 1000
cpu = 4
timeout = "1h"
tmp_size = "1G"
[network]
allow = ["example.com"]
)");
  fs.AddWorkspaceFile(text);
  flags.profile = "t";
  return testing::Load(fs, flags);
}

void ExpectNarrowError(const Result<Policy>& r, int line, const char* key) {
  ASSERT_FALSE(r.ok()) << key;
  const std::string& m = r.status().message();
  EXPECT_THAT(m, HasSubstr(kFile + ":" + std::to_string(line) + ": " + key)) << m;
  EXPECT_THAT(m, HasSubstr("may only narrow")) << m;
}

TEST(WorkspaceFile, AbsentIsFine) {
  MemFs fs;
  Result<Policy> r = testing::Load(fs);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_TRUE(std::none_of(r->sources.begin(), r->sources.end(),
                           [](const ProfileSource& s) { return s.origin == "workspace"; }));
  EXPECT_NE(std::find(fs.reads().begin(), fs.reads().end(), kFile), fs.reads().end());
}

TEST(WorkspaceFile, NarrowingKeysAreAccepted) {
  Result<Policy> r = WithWorkspaceFile(R"([workspace]
access = "read"
[filesystem]
deny = ["secrets", "~/.cache"]
protected = ["Makefile"]
[network]
deny = ["example.com"]
[limits]
memory = "2G"
pids = 100
cpu = 1.5
timeout = "10m"
tmp_size = "1G"
file_size = "100M"
)");
  // A relative deny path names a path in the workspace.
  ASSERT_TRUE(r.ok()) << ErrorOf(r);

  r = WithWorkspaceFile(R"([workspace]
access = "read"
[filesystem]
deny = ["/home/u/proj/secrets", "~/.cache"]
protected = ["Makefile"]
[network]
deny = ["example.com"]
[limits]
memory = "2G"
pids = 100
cpu = 1.5
timeout = "10m"
tmp_size = "1G"
file_size = "100M"
)");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->workspace_access, Access::kRead);
  EXPECT_EQ(r->workspace_origin.source, kFile);
  EXPECT_EQ(r->deny.back().path, "/home/u/.cache");
  EXPECT_EQ(r->deny.back().origin.source, kFile);
  EXPECT_EQ(r->protected_paths.back().relpath, "Makefile");
  EXPECT_EQ(r->network.deny.back().pattern, "example.com");
  EXPECT_EQ(r->limits.memory_bytes, 2ull << 30);
  EXPECT_EQ(r->limits.origins.at("memory").source, kFile);
  EXPECT_EQ(r->limits.pids, 100u);
  EXPECT_DOUBLE_EQ(*r->limits.cpu_cores, 1.5);
  EXPECT_EQ(r->limits.timeout_ms, 600000u);
  EXPECT_EQ(r->limits.tmp_size_bytes, 1ull << 30);     // equal is not wider
  EXPECT_EQ(r->limits.file_size_bytes, 100ull << 20);  // unset before: any value narrows
  const ProfileSource& last = r->sources.back();
  EXPECT_EQ(last.origin, "workspace");
  EXPECT_EQ(last.name, kFile);
  EXPECT_EQ(last.sha256.size(), 64u);
}

TEST(WorkspaceFile, WorkspaceAccessOnlyNarrower) {
  ASSERT_TRUE(WithWorkspaceFile("[workspace]\naccess = \"none\"\n").ok());
  ASSERT_TRUE(WithWorkspaceFile("[workspace]\naccess = \"write\"\n").ok());  // equal
  MemFs fs;
  fs.AddProfile("ro", "[workspace]\naccess = \"read\"\n");
  fs.AddWorkspaceFile("\n[workspace]\naccess = \"write\"\n");
  RunFlags f;
  f.profile = "ro";
  Result<Policy> r = testing::Load(fs, f);
  ExpectNarrowError(r, 3, "workspace.access");
  EXPECT_THAT(ErrorOf(r), HasSubstr("wider than the effective access \"read\""));
  fs.AddWorkspaceFile("[workspace]\naccess = \"read\"\n");
  EXPECT_TRUE(testing::Load(fs, f).ok());
}

TEST(WorkspaceFile, EachWideningKeyIsRejected) {
  struct Case {
    const char* text;
    int line;
    const char* key;
  };
  const Case cases[] = {
      {"[filesystem]\nread = [\"/srv\"]\n", 2, "filesystem.read"},
      {"[filesystem]\nwrite = [\"~/.ssh\"]\n", 2, "filesystem.write"},
      {"[filesystem]\nnested_repo_depth = 1\n", 2, "filesystem.nested_repo_depth"},
      {"[network]\nallow = [\"evil.example.com\"]\n", 2, "network.allow"},
      {"[env]\npass = [\"ANTHROPIC_API_KEY\"]\n", 1, "env"},
      {"[credentials.x]\nfrom = \"env:X\"\nhosts = [\"evil\"]\n", 1, "credentials"},
      {"[approvals]\nauto_allow_once = [\"*\"]\n", 1, "approvals"},
      {"[sandbox]\nallow_degraded = [\"landlock\"]\n", 1, "sandbox"},
      {"description = \"hi\"\n", 1, "description"},
      {"\nextends = \"builtin:default\"\n", 2, "extends"},
  };
  for (const Case& c : cases) {
    ExpectNarrowError(WithWorkspaceFile(c.text), c.line, c.key);
  }
  Result<Policy> ext = WithWorkspaceFile("extends = \"x\"\n");
  EXPECT_THAT(ErrorOf(ext), HasSubstr("cannot extend profiles"));
}

TEST(WorkspaceFile, UnknownKeysAreErrorsWithTheNarrowingNote) {
  Result<Policy> r = WithWorkspaceFile("\n\nlimitz = 1\n");
  ExpectNarrowError(r, 3, "limitz");
  EXPECT_THAT(ErrorOf(r), HasSubstr("did you mean 'limits'"));
  ExpectNarrowError(WithWorkspaceFile("[filesystem]\nraed = []\n"), 2, "filesystem.raed");
}

TEST(WorkspaceFile, LimitsOnlyLower) {
  struct Case {
    const char* text;
    const char* key;
  };
  const Case cases[] = {
      {"[limits]\nmemory = \"16G\"\n", "limits.memory"},
      {"[limits]\npids = 1001\n", "limits.pids"},
      {"[limits]\ncpu = 4.5\n", "limits.cpu"},
      {"[limits]\ntimeout = \"2h\"\n", "limits.timeout"},
      {"[limits]\ntmp_size = 1073741825\n", "limits.tmp_size"},
  };
  for (const Case& c : cases) {
    Result<Policy> r = WithWorkspaceFile(c.text);
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":2: " + c.key)) << c.key;
    EXPECT_THAT(ErrorOf(r), HasSubstr("above the effective limit")) << c.key;
    EXPECT_THAT(ErrorOf(r), HasSubstr("may only lower limits")) << c.key;
    EXPECT_THAT(ErrorOf(r), HasSubstr(testing::ProfilePath("t"))) << c.key;  // names the source
  }
  // Validation still applies to narrowing values.
  EXPECT_THAT(ErrorOf(WithWorkspaceFile("[limits]\nmemory = \"-1G\"\n")), HasSubstr("negative"));
}

// The proxy connection cap is a limit the workspace file may lower, never raise; unset in the
// profiles it stands at the default, not at "unlimited".
TEST(WorkspaceFile, ProxyConnectionsOnlyLowerThanTheDefaultOrTheProfile) {
  Result<Policy> r = WithWorkspaceFile("[limits]\nproxy_connections = 20\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.proxy_connections, 20u);
  r = WithWorkspaceFile("[limits]\nproxy_connections = 129\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":2: limits.proxy_connections"));
  EXPECT_THAT(ErrorOf(r), HasSubstr("above the default limit 128"));
  EXPECT_THAT(ErrorOf(r), HasSubstr("may only lower limits"));

  MemFs fs;
  fs.AddProfile("t", "[limits]\nproxy_connections = 300\n");
  fs.AddWorkspaceFile("[limits]\nproxy_connections = 301\n");
  RunFlags flags;
  flags.profile = "t";
  r = testing::Load(fs, flags);
  EXPECT_THAT(ErrorOf(r), HasSubstr("above the effective limit 300"));
  fs.AddWorkspaceFile("[limits]\nproxy_connections = 200\n");
  r = testing::Load(fs, flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.proxy_connections, 200u);
}

TEST(WorkspaceFile, CommandLineComesAfterTheWorkspaceFile) {
  // The user's own flags are applied last: they may raise a limit the workspace lowered.
  RunFlags f;
  f.memory = "4G";
  Result<Policy> r = WithWorkspaceFile("[limits]\nmemory = \"2G\"\n", f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.memory_bytes, 4ull << 30);
  // The workspace's deny still beats a command-line write (deny beats everything).
  f = RunFlags();
  f.write = {"/home/u/proj/out"};
  r = WithWorkspaceFile("[filesystem]\ndeny = [\"/home/u/proj/out\"]\n", f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->deny.back().path, "/home/u/proj/out");
}

TEST(WorkspaceFile, MalformedFileIsAnErrorNotIgnored) {
  Result<Policy> r = WithWorkspaceFile("[limits\nmemory = 1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":1: invalid TOML"));
}

// Found by tests/fuzz (workspace_file): a table header whose key starts with a character no key
// starts with reached an assertion of toml++'s parser, which aborted a build without NDEBUG
// (policy/toml.h). It is toml++'s parse error, with the file and line.
TEST(WorkspaceFile, TableHeaderWithoutAKeyIsAnError) {
  for (const char* header : {"[/etwork]", "[[/x]]", "[ =]", "[{}]"}) {
    Result<Policy> r =
        WithWorkspaceFile(std::string("[workspace]\naccess = \"read\"\n") + header + "\n");
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":3: invalid TOML")) << header;
  }
  // Positive control: a header with a bare and a quoted key.
  Result<Policy> r = WithWorkspaceFile("[workspace]\naccess = \"read\"\n[ \"limits\" ]\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
}

// Every control character but tab, LF and CR is refused before parsing, with its line (a NUL
// after '[' was the first input the fuzzer found for the assertion above).
TEST(WorkspaceFile, ControlCharactersAreRefusedBeforeParsing) {
  for (const std::string& text :
       {std::string("[workspace]\naccess = \"read\"\n[\0\0filesystem]\n", 43),
        std::string("[limits]\n[\x01limits]\n"), std::string("# a \x7f comment\n")}) {
    Result<Policy> r = WithWorkspaceFile(text);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":"));
    EXPECT_THAT(ErrorOf(r), HasSubstr(": invalid TOML: control character U+00"));
  }
  Result<Policy> r = WithWorkspaceFile(std::string("[workspace]\naccess = \"read\"\n[\0x]\n", 33));
  EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":3: invalid TOML: control character U+0000"));
  // Positive control: tab and CRLF are TOML's own whitespace and newline.
  r = WithWorkspaceFile("[limits]\r\nmemory\t= \"2G\"\r\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.memory_bytes, 2ull << 30);
}

// Found by tests/fuzz (workspace_file): a character beyond ASCII right after a value reached
// toml++'s "unreachable" whitespace table (undefined behaviour). Outside strings and comments
// TOML allows none: refused before parsing, with the line; inside them they are text.
TEST(WorkspaceFile, CharactersBeyondAsciiOutsideStringsAreRefusedBeforeParsing) {
  for (const std::string text : {"[limits]\nmemory = \"2G\"\xd0\xaa\n",
                                 "[limits]\nmemory = \"2G\" \xc2\xa1\n",
                                 "[limits]\n\xe2\x80\x83memory = \"2G\"\n"}) {
    Result<Policy> r = WithWorkspaceFile(text);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":2: invalid TOML: a character beyond ASCII"));
  }
  // Positive control: in comments and in every kind of string they are text.
  Result<Policy> r = WithWorkspaceFile(
      "# \xd0\xaa\xc3\xa9\n[limits] # \xd0\xaa\nmemory = \"2G\"\n[filesystem]\n"
      "deny = [\"a\xd0\xaa\", 'b\xd0\xaa', \"\"\"c\xd0\xaa\\\"\"\"\", '''d\xd0\xaa''']\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.memory_bytes, 2ull << 30);
}

// Found by tests/fuzz (workspace_file): a multi-line string may end in one or two quotes more
// than its delimiter; the check took the extra quote for the start of another string and
// skipped the next lines with it, so a character beyond ASCII there reached toml++'s table.
TEST(WorkspaceFile, AMultiLineStringsExtraClosingQuotesAreItsOwn) {
  for (const std::string quote : {"\"", "'"}) {
    const std::string q3 = quote + quote + quote;
    Result<Policy> r = WithWorkspaceFile("[limits]\nmemory = " + q3 + "2G" + q3 + quote +
                                         "\n\xd0\xaa = 1\nb = " + quote + "y" + quote + "\n");
    ASSERT_FALSE(r.ok()) << quote;
    EXPECT_THAT(ErrorOf(r), HasSubstr(kFile + ":3: invalid TOML: a character beyond ASCII"));
  }
  // Positive control: the extra quotes are the string's, and the file parses.
  Result<Policy> r = WithWorkspaceFile(
      "[filesystem]\ndeny = [\"\"\"a\xd0\xaa\"\"\"\"\", '''b''''', \"c\xd0\xaa\"]\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
}

// The reader refuses what is not a small regular file (cli: common/untrusted_file.h); its word,
// which names what the file is and the fix, reaches the user after the file's path.
TEST(WorkspaceFile, TheReadersRefusalIsTheErrorAfterThePath) {
  EXPECT_EQ(WorkspaceFilePath(testing::kWorkspace), kFile);
  FileReader reader = [](const std::string& path) -> Result<std::string> {
    if (path == kFile) {
      return Error(Code::kFailedPrecondition, "a FIFO, not a regular file: remove it (rm X)");
    }
    return NotFound(path + ": no such file");
  };
  Result<Policy> r = LoadPolicy(RunFlags(), testing::TestContext(), reader);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorOf(r), kFile + ": a FIFO, not a regular file: remove it (rm X)");
}

TEST(WorkspaceFile, TransparentCaptureMayOnlyBeTurnedOff) {
  Result<Policy> r = WithWorkspaceFile("[network]\ntransparent = false\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_FALSE(r->network.transparent);
  EXPECT_EQ(r->network.transparent_origin.source, kFile);
  EXPECT_EQ(r->network.transparent_origin.line, 2);
  ExpectNarrowError(WithWorkspaceFile("[network]\ntransparent = true\n"), 2,
                    "network.transparent");
}

TEST(WorkspaceFile, NetworkRulesAreNotForAWorkspaceFile) {
  ExpectNarrowError(WithWorkspaceFile("[network]\n[[network.rules]]\nhost = \"example.com\"\n"),
                    2, "network.rules");
}

}  // namespace
}  // namespace ward::policy
