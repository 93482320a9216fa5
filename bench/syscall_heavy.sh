#!/bin/sh
# Syscall-heavy work under ward against bare: `find /usr -type f | wc -l` and `git status` in a
# large repository (generated: 20,000 files). Target: ward / bare <= 1.05 (medians).
# Reference rows (FLOOR=0 skips them): the same work under only a seccomp filter shaped like
# ward's, only a Landlock ruleset on the same roots, and both, applied by bench/layer_floor.c
# without ward: what the kernel charges for the two layers themselves, against which ward's own
# share is the rest.
# Each measured command runs the work LOOPS times (default 5) in one shell, bare or inside one
# sandbox: the ratio is the cost of the layers on the work itself (Landlock, seccomp, the
# mount view, the cgroup), with ward's start-up (measured by bench/startup.sh) spread over the
# loops. LOOPS=1 gives the single-call figure, start-up included.
# INTERLEAVE=1 runs the commands interleaved instead of in hyperfine's batches (see
# bench/interleave.c), which a noisy machine's drift cannot skew; RUNS is then the number of
# iterations.
#   bench/syscall_heavy.sh [WARD] [RUNS]      env: LOOPS, RUN_AS=<uid> (run unprivileged),
#                                                  INTERLEAVE=1
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
RUNS=${2:-15}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
here=$(cd "$(dirname "$0")" && pwd)
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
LOOPS=${LOOPS:-5}
# A failing iteration fails the command (a loop's status would otherwise be its last
# assignment's), so that a layer which breaks the work cannot pass for a fast one.
loop() { echo "i=0; while [ \$i -lt $LOOPS ]; do $1 || exit 1; i=\$((i+1)); done"; }
FIND=$(loop 'find /usr -type f | wc -l >/dev/null')
GIT=$(loop 'git status --porcelain >/dev/null')
# Every command gets the same empty HOME: git reads its config there, and a HOME the
# Landlock-only reference rows cannot read (root's, say) would make git fail there.
mkdir -p "$dir/home"
pre="env HOME=$dir/home"
if [ -n "${RUN_AS:-}" ]; then
  # The user's own group too, as in a real checkout: a file of a group that is not mapped into
  # the sandbox (supplementary groups are dropped) shows there as the overflow group, and git
  # then refreshes its whole index at each switch between the host and ward.
  gid=$(id -g "$RUN_AS" 2>/dev/null || echo "$RUN_AS")
  chown -R "$RUN_AS:$gid" "$dir"
  chmod 755 "$dir"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
  stage_ward "$dir"
fi
set -- -n find-bare "sh -c '$FIND'" \
       -n find-ward "$WARD run --no-audit -- sh -c '$FIND'" \
       -n git-bare "sh -c '$GIT'" \
       -n git-ward "$WARD run --no-audit -- sh -c '$GIT'"
if [ "${FLOOR:-1}" != 0 ] && cc -O2 -o "$dir/layer_floor" "$here/layer_floor.c" -lseccomp 2>/dev/null; then
  chmod 755 "$dir/layer_floor"
  # The roots ward's default profile reads, and the repository (the workspace) read-write.
  roots="/usr /etc /opt /bin /sbin /lib /lib64 /dev $dir/home +$repo"
  for layer in seccomp landlock both; do
    set -- "$@" -n "find-$layer" "$dir/layer_floor $layer $roots -- sh -c '$FIND'" \
                -n "git-$layer" "$dir/layer_floor $layer $roots -- sh -c '$GIT'"
  done
fi
if [ "${INTERLEAVE:-0}" = 1 ]; then
  # One run of each command per iteration, the order reversed every other iteration
  # (bench/interleave.c): a drift of the machine falls on every command alike. Each command is
  # started by `sh -c`, the same small cost for all.
  cc -O2 -o "$dir/interleave" "$here/interleave.c"
  chmod 755 "$dir/interleave"
  # The (-n NAME COMMAND) triples become `sh -c COMMAND` runs separated by `::`.
  names=""
  n=$(($# / 3))
  sep=""
  while [ "$n" -gt 0 ]; do
    names="$names $2"
    cmd=$3
    shift 3
    set -- "$@" $sep sh -c "$cmd"
    sep="::"
    n=$((n - 1))
  done
  # shellcheck disable=SC2086
  $pre "$dir/interleave" -w 2 "$RUNS" "$@" > "$dir/interleaved" || {
    cat "$dir/interleaved" >&2; echo "a command failed" >&2; exit 1; }
  # shellcheck disable=SC2086  # the names are split on purpose: one argument each
  python3 - "$dir/interleaved" $names > "$out" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
print(json.dumps({"results": [{"command": n, "median": float(l.split()[0]) / 1000}
                              for n, l in zip(sys.argv[2:], lines)]}))
PY
else
  # shellcheck disable=SC2086
  $pre hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$out" "$@" >&2
fi
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
for k, v in r.items(): print(f"{k:<10} {v:8.2f} ms (median)")
print(f"loops per command: {__import__('os').environ.get('LOOPS', '5')}")
print(f"find: ward / bare = {r['find-ward'] / r['find-bare']:.3f}")
print(f"git status: ward / bare = {r['git-ward'] / r['git-bare']:.3f}")
if 'find-both' in r:
    print("the layers alone, without ward (bench/layer_floor.c), / bare:")
    for w in ('find', 'git'):
        row = '  '.join(f"{l} {r[f'{w}-{l}'] / r[f'{w}-bare']:.3f}" for l in ('seccomp', 'landlock', 'both'))
        print(f"  {w:<5} {row}  -> ward / (both layers) = {r[f'{w}-ward'] / r[f'{w}-both']:.3f}")
PY
