// Threat class I (CD01) and H (TR01): the creation guard under a race. One thread of the
// sandboxed probe makes 10,000 creations through a directory that a second thread keeps
// swapping with links that point outside the view (absolute, relative past the root, through
// /proc magic links), renaming and emptying. Every descriptor a creation returned is checked
// from outside, by inode, against the host's files outside the view.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "harness.h"

namespace ward::test {
namespace {

constexpr const char* kCanary = "RACE-CANARY-0c93";

class CreationGuardRace : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    outside_ = root_->path() + "/outside";
    MakeDirs(outside_, 0755);
    WriteFile(outside_ + "/canary", kCanary, 0666);
    WriteFile(outside_ + "/x", kCanary, 0666);
    MakeDirs(outside_ + "/d", 0777);
  }
  // (dev, ino) of everything under the outside directory.
  std::set<std::pair<unsigned long, unsigned long>> OutsideInodes() {
    std::set<std::pair<unsigned long, unsigned long>> out;
    for (const char* rel : {"", "/canary", "/x", "/d"}) {
      struct stat st;
      if (stat((outside_ + rel).c_str(), &st) == 0) out.insert({st.st_dev, st.st_ino});
    }
    return out;
  }
  // How many logged descriptors were outside files.
  int Hits(const std::string& log) {
    const auto outside = OutsideInodes();
    std::istringstream in(ReadFile(log));
    unsigned long dev, ino;
    int hits = 0;
    while (in >> dev >> ino) hits += outside.count({dev, ino}) ? 1 : 0;
    return hits;
  }
  static long Field(const std::string& out, const std::string& key) {
    size_t at = out.find(key + "=");
    return at == std::string::npos ? -1 : std::stol(out.substr(at + key.size() + 1));
  }

  std::string outside_;
};

TEST_F(CreationGuardRace, SwappedLinksAndRenamedDirectoriesNeverReachOutside) {
  RunOptions o;
  o.timeout_s = 280;
  RunResult r = Probe({"guard-race", "10000", outside_, "race.log"}, {}, o);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(Field(r.out, "rounds"), 10000) << r.out;
  EXPECT_GT(Field(r.out, "opened"), 1000) << r.out;  // the creations did happen
  EXPECT_EQ(Hits(ws_ + "/race.log"), 0) << r.out;
  EXPECT_EQ(ReadFile(outside_ + "/canary"), kCanary);
  EXPECT_EQ(ReadFile(outside_ + "/x"), kCanary);
  EXPECT_EQ(RunProgram({"/bin/ls", "-A", outside_ + "/d"}).out, "");
  EXPECT_EQ(RunProgram({"/bin/ls", "-A", outside_}).out, "canary\nd\nx\n");
}

// Control: the same probe without the sandbox, where the links do lead outside (and `d` starts
// as one), is caught by the same inode check.
TEST_F(CreationGuardRace, TheInodeCheckSeesAnEscape) {
  // The swapper may win every round of one attempt on a loaded machine (no creation opens at
  // all): the control takes up to five attempts to see the escape it exists to see.
  int hits = 0;
  std::string outs;
  for (int attempt = 0; attempt < 5 && hits == 0; ++attempt) {
    const std::string scratch = root_->path() + "/scratch" + std::to_string(attempt);
    MakeDirs(scratch, 0755);
    ASSERT_EQ(symlink(outside_.c_str(), (scratch + "/d").c_str()), 0);
    RunOptions o;
    o.cwd = scratch;
    o.timeout_s = 120;
    RunResult r = RunProgram({ProbeBin(), "guard-race", "600", outside_, "race.log"}, o);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    hits = Hits(scratch + "/race.log");
    outs += r.out;
  }
  EXPECT_GT(hits, 0) << outs;
}

}  // namespace
}  // namespace ward::test
