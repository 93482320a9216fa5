// `ward profiles list|show`: every profile -p can name, built-in and the user's own, with its
// source; a user file that shadows a built-in says so; an unknown name gets a suggestion.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "policy/builtin_profiles.h"

namespace ward::test {
namespace {

class ProfilesCliTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    config_ = root_->path() + "/config";
    profiles_ = config_ + "/ward/profiles";
    MakeDirs(profiles_);
    WriteFile(profiles_ + "/default.toml",
              "extends = \"builtin:default\"\ndescription = \"my default\"\n");
    WriteFile(profiles_ + "/mine.toml", kMine);
    WriteFile(profiles_ + "/broken.toml", "extends = \"default\"\n[network]\nalow = []\n");
  }
  RunResult Ward(const std::vector<std::string>& args) {
    RunOptions o = Defaults();
    o.env["XDG_CONFIG_HOME"] = config_;
    return RunWard(args, o);
  }
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      out.push_back(text.substr(start, nl - start));
    }
    return out;
  }
  static constexpr const char* kMine =
      "# my web profile\nextends = \"default\"\n\n[network]\nallow = [\"example.org\"]\n";
  std::string config_;
  std::string profiles_;
};

TEST_F(ProfilesCliTest, ListNamesEachProfileWithItsSourceAndSaysWhatShadowsWhat) {
  RunResult r = Ward({"profiles", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  const int w = static_cast<int>(std::string("builtin:default").size());
  auto row = [&](const std::string& name, const std::string& source) {
    std::string padded = name;
    padded.resize(std::max<size_t>(w, name.size()), ' ');
    return padded + "  " + source;
  };
  auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has(row("default", profiles_ + "/default.toml (shadows the built-in default)")))
      << r.out;
  EXPECT_TRUE(has(row("builtin:default",
                      "built-in (shadowed by your file; -p builtin:default names it)")))
      << r.out;
  EXPECT_TRUE(has(row("mine", profiles_ + "/mine.toml"))) << r.out;
  EXPECT_TRUE(has(row("claude-code", "built-in"))) << r.out;
  // Each profile's description (after extends: mine inherits my default's), or why it fails.
  EXPECT_TRUE(has(std::string(w, ' ') + "    my default")) << r.out;
  auto broken = std::find(lines.begin(), lines.end(), row("broken", profiles_ + "/broken.toml"));
  ASSERT_NE(broken, lines.end()) << r.out;
  ASSERT_NE(broken + 1, lines.end());
  EXPECT_EQ((broken + 1)->find(std::string(w, ' ') + "    does not load: " + profiles_ +
                               "/broken.toml:3: network.alow: unknown key"),
            0u)
      << *(broken + 1);
}

TEST_F(ProfilesCliTest, NamesAreOnePerLineForCompletion) {
  RunResult r = Ward({"profiles", "list", "--names"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> expected = {"broken", "mine"};
  for (const auto& p : policy::BuiltinProfiles()) expected.emplace_back(p.name);
  std::sort(expected.begin(), expected.end());
  std::string want;
  for (const auto& n : expected) want += n + "\n";
  EXPECT_EQ(r.out, want);
}

TEST_F(ProfilesCliTest, JsonListsSourcesAndShadowing) {
  RunResult r = Ward({"profiles", "list", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  auto find = [&](const std::string& name) {
    for (const auto& e : j) {
      if (e["name"] == name) return e;
    }
    return nlohmann::json();
  };
  EXPECT_EQ(find("default")["source"], profiles_ + "/default.toml");
  EXPECT_EQ(find("default")["shadows_builtin"], true);
  EXPECT_EQ(find("builtin:default")["source"], "built-in");
  EXPECT_EQ(find("builtin:default")["shadowed"], true);
  EXPECT_EQ(find("mine")["shadows_builtin"], false);
  EXPECT_EQ(find("mine")["description"], "my default");
  EXPECT_TRUE(find("mine")["error"].is_null());
  EXPECT_TRUE(find("broken")["error"].is_string());
  EXPECT_EQ(find("codex")["source"], "built-in");
}

TEST_F(ProfilesCliTest, ShowPrintsTheTextAsWrittenUnderItsSource) {
  RunResult r = Ward({"profiles", "show", "mine"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "# ward profile mine: " + profiles_ + "/mine.toml\n" + kMine);
  r = Ward({"profiles", "show", "default"});
  EXPECT_EQ(Lines(r.out).at(0), "# ward profile default: " + profiles_ +
                                    "/default.toml (shadows the built-in default)");
  r = Ward({"profiles", "show", "builtin:default"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::string builtin;
  for (const auto& p : policy::BuiltinProfiles()) {
    if (p.name == "default") builtin = std::string(p.text);
  }
  EXPECT_EQ(r.out, "# ward profile builtin:default: built-in (shadowed by your file; -p "
                   "builtin:default names it)\n" +
                       builtin);
}

TEST_F(ProfilesCliTest, ShowEffectivePrintsThePolicyAfterExtends) {
  RunResult r = Ward({"profiles", "show", "mine", "--effective"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["description"], "my default");
  ASSERT_EQ(j["network"]["allow"].size(), 1u) << j["network"].dump();
  EXPECT_EQ(j["network"]["allow"][0]["pattern"], "example.org");
  // The chain: the built-in default, my default, mine.
  ASSERT_EQ(j["sources"].size(), 3u) << j["sources"].dump();
  EXPECT_EQ(j["sources"][0]["name"], "default");
  EXPECT_EQ(j["sources"][0]["origin"], "builtin");
  EXPECT_EQ(j["sources"][2]["name"], profiles_ + "/mine.toml");
  // A workspace's .ward.toml is not part of a profile.
  WriteFile(ws_ + "/.ward.toml", "[network]\ndeny = [\"example.net\"]\n");
  r = Ward({"profiles", "show", "mine", "--effective"});
  EXPECT_TRUE(nlohmann::json::parse(r.out)["network"]["deny"].empty()) << r.out;
}

TEST_F(ProfilesCliTest, AnUnknownNameIsAnErrorWithTheNearestName) {
  RunResult r = Ward({"profiles", "show", "defualt"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("ward profiles: unknown profile 'defualt' (did you mean 'default'?); "
                        "profiles: ",
                        0),
            0u)
      << r.err;
  r = Ward({"profiles", "show", "mien"});
  EXPECT_EQ(r.err.rfind("ward profiles: unknown profile 'mien' (did you mean 'mine'?)", 0), 0u)
      << r.err;
}

}  // namespace
}  // namespace ward::test
