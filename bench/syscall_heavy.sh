#!/bin/sh
# Syscall-heavy work under ward against bare: `find /usr -type f | wc -l` and `git status` in a
# large repository (generated: 20,000 files). Target: ward / bare <= 1.05 (medians).
#   bench/syscall_heavy.sh [WARD] [RUNS]
set -eu
WARD=${1:-build/bin/ward}
RUNS=${2:-15}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
repo=$dir/repo
mkdir -p "$repo"
cd "$repo"
git init -q .
git config user.email bench@ward.invalid; git config user.name bench
python3 - <<'PY'
import os
for d in range(200):
    os.makedirs(f"src/d{d}", exist_ok=True)
    for f in range(100):
        with open(f"src/d{d}/f{f}.txt", "w") as fh:
            fh.write(f"{d} {f}\n")
PY
git add -A >/dev/null && git commit -qm init
echo x >> src/d1/f1.txt
out=$dir/result.json
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$out" \
  -n find-bare "sh -c 'find /usr -type f | wc -l'" \
  -n find-ward "$WARD run --no-audit -- sh -c 'find /usr -type f | wc -l'" \
  -n git-bare "git status --porcelain" \
  -n git-ward "$WARD run --no-audit -- git status --porcelain" >&2
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
for k, v in r.items(): print(f"{k:<10} {v:8.2f} ms (median)")
print(f"find: ward / bare = {r['find-ward'] / r['find-bare']:.3f}")
print(f"git status: ward / bare = {r['git-ward'] / r['git-bare']:.3f}")
PY
