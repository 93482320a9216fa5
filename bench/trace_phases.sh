#!/bin/sh
# Where the start-up of `ward run -- true` goes: runs it N times with WARD_TRACE_TIMING=1 and
# prints, for every trace mark (src/common/trace.h), its median time since ward's own start and
# the 10th and 90th percentiles, in the order of the medians. The supervisor's marks and those of
# sandbox init ("init: ..."), the command ("command: ...") and the helper threads interleave, so
# the critical path shows as the chain of marks each side waits on (docs/performance.md, "Where
# a run's start-up goes"). The marks print to stderr, which is a file here: a terminal or a pipe
# read by a busy process would slow the marks down.
#   bench/trace_phases.sh [WARD] [N]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
N=${2:-40}
case $N in '' | *[!0-9]*) echo "N must be a number of runs, got '$N'" >&2; exit 2 ;; esac
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
stage_ward "$dir"
pre=""
# The audit trail goes to a directory that outlives the bench (lib.sh: state_dir).
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home"
  pre=$(as_user "$RUN_AS")
fi
cd "$dir/ws"
i=0
while [ "$i" -lt "$N" ]; do
  # shellcheck disable=SC2086  # $pre is a command prefix, split on purpose
  $pre env HOME="$dir/home" WARD_TRACE_TIMING=1 \
    "$dir/ward" run -- true 2>> "$dir/marks" || { echo "ward run -- true failed" >&2; exit 1; }
  i=$((i + 1))
done
python3 - "$dir/marks" "$N" <<'PY'
import re, statistics, sys
times = {}
for line in open(sys.argv[1]):
    m = re.match(r"ward: \+([0-9.]+) ms (.*) \[-?[0-9]+\]$", line.rstrip("\n"))
    if m:
        times.setdefault(m.group(2), []).append(float(m.group(1)))
if not times:
    sys.exit("no trace marks: is this a build of ward with trace marks?")
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]
print(f"{'median':>8} {'p10':>8} {'p90':>8}  mark (ms since ward's start; {sys.argv[2]} runs)")
for name, v in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
    print(f"{statistics.median(v):8.3f} {pct(v, 0.1):8.3f} {pct(v, 0.9):8.3f}  {name}")
PY
