#include "common/line_diff.h"

#include <gtest/gtest.h>

#include <string>

namespace ward {
namespace {

std::string Plain(std::string_view line) { return std::string(line); }

std::string Diff(const std::string& a, const std::string& b, int context = 3) {
  return UnifiedHunks(SplitLines(a), SplitLines(b), context, &Plain);
}

TEST(LineDiffTest, EqualTextsHaveNoHunks) {
  EXPECT_EQ(Diff("", ""), "");
  EXPECT_EQ(Diff("a\nb\n", "a\nb\n"), "");
}

TEST(LineDiffTest, OneChangedLineWithContext) {
  EXPECT_EQ(Diff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n"),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(LineDiffTest, AdditionToAnEmptyFileAndDeletionOfAll) {
  EXPECT_EQ(Diff("", "x\ny\n"), "@@ -0,0 +1,2 @@\n+x\n+y\n");
  EXPECT_EQ(Diff("x\n", ""), "@@ -1 +0,0 @@\n-x\n");
}

TEST(LineDiffTest, DistantChangesMakeSeparateHunks) {
  std::string a, b;
  for (int i = 1; i <= 20; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 || i == 18 ? "X" : std::to_string(i)) + "\n";
  }
  EXPECT_EQ(Diff(a, b, 1), "@@ -1,3 +1,3 @@\n 1\n-2\n+X\n 3\n@@ -17,3 +17,3 @@\n 17\n-18\n+X\n 19\n");
}

TEST(LineDiffTest, InsertionInTheMiddleIsMinimal) {
  EXPECT_EQ(Diff("a\nb\nc\n", "a\nb\nnew\nc\n", 1), "@@ -2,2 +2,3 @@\n b\n+new\n c\n");
}

TEST(LineDiffTest, AMissingFinalNewlineIsAChange) {
  EXPECT_EQ(Diff("a\nb", "a\nb\n"), "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
  EXPECT_EQ(Diff("a\n", "a\nb"), "@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n");
}

TEST(LineDiffTest, PastTheEditBoundTheMiddleIsReplacedWhole) {
  std::string a, b;
  for (int i = 0; i < 50; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += "b" + std::to_string(i) + "\n";
  }
  std::string d = UnifiedHunks(SplitLines(a), SplitLines(b), 3, &Plain, /*max_edits=*/10);
  EXPECT_EQ(d.rfind("@@ -1,50 +1,50 @@\n-a0\n", 0), 0u) << d;
  EXPECT_NE(d.find("+b49\n"), std::string::npos);
}

}  // namespace
}  // namespace ward
