#!/bin/sh
# `ward --version` names the version of the project, the commit the binary was built from (git
# HEAD of the source tree at build time) and the Landlock ABI the build knows up to; a tree
# without git (a tarball) says "commit: unknown".
#   version_test.sh WARD SOURCE_DIR
set -u
ward=$1 src=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
out=$("$ward" --version) || fail "ward --version exited $?"
version=$(sed -n 's/^project(ward VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$(echo "$out" | sed -n 1p)" = "ward $version" ] || fail "first line is not 'ward $version': $out"
if head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
  echo "$out" | grep -qE "^commit: $head(-dirty)?$" ||
    fail "no 'commit: $head' line (HEAD; rebuild if the binary is older than HEAD): $out"
fi
abi=$(sed -n 's/.*kNewestLandlockAbiUsed = \([0-9]*\);/\1/p' "$src/src/enforce/landlock.h")
echo "$out" | grep -q "^  landlock ABI 1-$abi:" || fail "no 'landlock ABI 1-$abi' line: $out"
echo "$out" | grep -q "^  seccomp: .*user notification" || fail "no seccomp line: $out"
# A tarball: cmake/build_info.cmake without a .git beside the sources.
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cmake -DSRC="$tmp" -DOUT="$tmp/build_info.cc" -P "$src/cmake/build_info.cmake"
grep -q 'kBuildCommit\[\] = "unknown";' "$tmp/build_info.cc" || fail "outside git: $(cat "$tmp/build_info.cc")"
cmake -DSRC="$tmp" -DOUT="$tmp/build_info.cc" -DCOMMIT=1.2-debian -P "$src/cmake/build_info.cmake"
grep -q 'kBuildCommit\[\] = "1.2-debian";' "$tmp/build_info.cc" || fail "WARD_COMMIT not used: $(cat "$tmp/build_info.cc")"
[ "$failures" = 0 ] && echo "ward --version: $(echo "$out" | sed -n 2p)"
exit $((failures > 0))
