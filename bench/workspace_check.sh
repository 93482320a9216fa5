#!/bin/sh
# What the check after a run costs where it matters most: `ward run -- true` in a workspace that
# holds a 200,000-file node_modules against the same in an empty workspace, interleaved
# (bench/interleave.c). The check looks only at what the creation guard journaled, so the two
# should cost the same; a check that walked the tree would show here.
#   bench/workspace_check.sh WARD [N]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck shell=sh source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:?usage: bench/workspace_check.sh WARD [N]}
N=${2:-200}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/empty" "$dir/big" "$dir/home"
cc -O2 -o "$dir/interleave" "$here/interleave.c"
stage_ward "$dir"
# 2,000 packages of 100 files each, a package.json and a nested directory apiece.
python3 - "$dir/big" <<'PY'
import os, sys
root = os.path.join(sys.argv[1], "node_modules")
for p in range(2000):
    d = os.path.join(root, f"pkg{p}", "lib")
    os.makedirs(d)
    with open(os.path.join(root, f"pkg{p}", "package.json"), "w") as f:
        f.write('{"name": "pkg%d"}\n' % p)
    for i in range(99):
        with open(os.path.join(d, f"f{i}.js"), "w") as f:
            f.write("module.exports = %d;\n" % i)
PY
echo "$(find "$dir/big" -type f | wc -l) files in the big workspace"
use_state_dir
pre=""
if [ -n "${RUN_AS:-}" ]; then
  chown -R "$RUN_AS" "$dir/empty" "$dir/big" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi
cd "$dir"
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 5 "$N" "$WARD" run -C "$dir/big" -- true :: \
  "$WARD" run -C "$dir/empty" -- true | tee "$dir/out"
python3 - "$dir/out" <<'PY'
import sys
big, empty = [float(line.split()[0]) for line in open(sys.argv[1])]
print(f"big / empty = {big / empty:.3f}")
PY
