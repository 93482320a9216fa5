// What a kernel whose Landlock lacks a right does to a run (docs/kernels.md): each missing right
// is covered by another layer, or the run is refused naming it. These run on every kernel and
// assert the kernel's side: on ABI 3 and later Landlock itself refuses what the lower ABIs must
// refuse by planning.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "enforce/landlock.h"
#include "enforce/landlock_coverage.h"
#include "harness.h"

namespace ward::test {
namespace {

class LowerLandlockAbis : public SandboxTest {};

// A host file handed to the command as its stdin lies outside its view. From ABI 3 on the kernel
// refuses its truncation through /proc/self/fd/0 (the read-only mounts cover only the view);
// below ABI 3 nothing would, so the run is refused, naming the right and the descriptor.
TEST_F(LowerLandlockAbis, AHostFileAtStdinIsNeverTruncated) {
  TempDir outside("ward-stdin");
  const std::string notes = outside.path() + "/notes.txt";
  WriteFile(notes, "keep-these-notes-19", 0644);
  RunOptions o;
  o.stdin_file = notes;
  RunResult r = Probe({"truncate", "/proc/self/fd/0"}, {}, o);
  if (enforce::LandlockLacksTruncate(enforce::LandlockAbi())) {
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_NE(r.err.find("lacks the truncate right of ABI 3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stdin"), std::string::npos) << r.err;
  } else {
    EXPECT_EQ(r.out, "err EACCES /proc/self/fd/0\n") << r.err;
  }
  EXPECT_EQ(ReadFile(notes), "keep-these-notes-19");
  // Positive control: the probe does truncate a file of the workspace it was handed as stdin
  // (on a lower ABI, through a pipe instead: the fix the refusal names).
  const std::string mine = ws_ + "/scratch.txt";
  WriteFile(mine, "scratch", 0644);
  RunOptions in_view;
  in_view.stdin_file = mine;
  r = Probe({"truncate", "/proc/self/fd/0"}, {}, in_view);
  if (!enforce::LandlockLacksTruncate(enforce::LandlockAbi())) {
    EXPECT_EQ(r.out, "ok /proc/self/fd/0\n") << r.err;
    EXPECT_EQ(ReadFile(mine), "");
  }
  r = Probe({"truncate", mine});
  EXPECT_EQ(r.out, "ok " + mine + "\n") << r.err;
  EXPECT_EQ(ReadFile(mine), "");
}

// --ask injects host files by descriptor: below ABI 3 it is refused naming the right.
TEST_F(LowerLandlockAbis, AskNeedsTheTruncateRight) {
  const std::string runtime = root_->path() + "/run";
  MakeDirs(runtime, 0700);
  WriteFile(ws_ + "/here.txt", "in-view-78");
  RunOptions o;
  o.env["XDG_RUNTIME_DIR"] = runtime;
  RunResult r = Probe({"read", ws_ + "/here.txt"}, {"--ask"}, o);
  if (enforce::LandlockLacksTruncate(enforce::LandlockAbi())) {
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_NE(r.err.find("files granted by --ask"), std::string::npos) << r.err;
  } else {
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("in-view-78"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace ward::test
