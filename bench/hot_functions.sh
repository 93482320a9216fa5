#!/bin/sh
# Regenerates src/cli/hot_functions.txt: the functions of ward's own binary that a
# `ward run -- true` executes, which the link places side by side (src/cli/CMakeLists.txt), so
# that a run's processes touch ~200 pages of ward's code side by side rather than ~370 spread
# over its 4 MB. Samples where the supervisor, sandbox init and the command before its exec
# spend their user time (perf, cpu-clock, one sample per 50 us of CPU) over N runs as root and N
# more as RUN_AS (unprivileged, when given), and prints the sampled functions' symbol names,
# the most sampled first, to stdout. A function that is missing from the list still works; it
# only sits among the cold code. Rerun after large changes to what a run executes:
#   bench/hot_functions.sh [WARD] [N] > src/cli/hot_functions.txt    env: RUN_AS=<uid>
# Needs perf (Debian: linux-perf) and a ward built with its symbols (the default build).
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
N=${2:-200}
case $N in '' | *[!0-9]*) echo "N must be a number of runs, got '$N'" >&2; exit 2 ;; esac
command -v perf >/dev/null 2>&1 || { echo "perf is missing (Debian: apt-get install linux-perf)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (perf samples the unprivileged runs too)" >&2; exit 1; }
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home" "$dir/home-user"
stage_ward "$dir"
pre=""
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home-user"
  pre=$(as_user "$RUN_AS")
fi
cat > "$dir/runs.sh" <<EOF
set -e
cd "$dir/ws"
i=0
while [ \$i -lt $N ]; do
  env HOME="$dir/home" "$WARD" run -- true
  [ -z "$pre" ] || $pre env HOME="$dir/home-user" "$WARD" run -- true
  i=\$((i + 1))
done
EOF
echo "# Made by bench/hot_functions.sh ($N runs$([ -z "$pre" ] || echo " as root and as uid $RUN_AS" )): one symbol per line, most sampled first."
perf record -q -o "$dir/perf.data" -e cpu-clock:u -c 50000 -- sh "$dir/runs.sh" >&2
# Symbols in ward's own binary only; what the link cannot place (PLT entries, _init) is left out,
# and so is any name a linker script pattern could misread.
perf script -i "$dir/perf.data" -F ip,sym,dso --no-demangle 2>/dev/null |
  awk -v bin="($WARD)" '$NF == bin { print $2 }' |
  grep -E '^[A-Za-z_][A-Za-z0-9_.]*$' | grep -vxE '_init|_start' |
  sort | uniq -c | sort -k1,1nr -k2 | awk '{ print $2 }'
