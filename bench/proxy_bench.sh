#!/usr/bin/env bash
# Egress proxy figures on loopback, without a sandbox (issue 3):
#  1. throughput of one large HTTP transfer (default 1 GiB) from a local origin, direct vs
#     through the proxy (absolute-URI forwarding, and a CONNECT tunnel), allowed by address;
#  2. the latency a new connection pays for going through the proxy (p50, p99), per protocol.
#
# Usage: bench/proxy_bench.sh [BUILD_DIR]     (needs the ward_proxy_bench target and curl)
# Environment: RUNS (5 transfers per mode, median reported), SIZE (bytes, 1073741824),
#              N (connections per latency mode, 2000).
set -euo pipefail

BUILD=${1:-build}
BIN="$BUILD/bench/ward_proxy_bench"
RUNS=${RUNS:-5}
SIZE=${SIZE:-1073741824}
N=${N:-2000}
[ -x "$BIN" ] || { echo "missing $BIN: cmake --build $BUILD --target ward_proxy_bench" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME ARGS...: runs the driver in the background; wait_port NAME prints its port.
declare -A pid_of
start() {
  local name=$1
  shift
  "$BIN" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
  pid_of[$name]=$!
}
wait_port() {
  for _ in $(seq 100); do
    if grep -q '^listening ' "$tmp/$1.out" 2>/dev/null; then
      awk '/^listening /{print $2}' "$tmp/$1.out"
      return
    fi
    sleep 0.05
  done
  echo "$1 did not start: $(cat "$tmp/$1.err")" >&2
  exit 1
}

start origin origin
ORIGIN=$(wait_port origin)
start proxy proxy --allow "127.0.0.1:$ORIGIN"
PROXY=$(wait_port proxy)
# The same proxy copying through user space, to show what splice(2) saves.
start copy proxy --no-splice --allow "127.0.0.1:$ORIGIN"
COPY=$(wait_port copy)
URL="http://127.0.0.1:$ORIGIN/bytes/$SIZE"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "# ward egress proxy, loopback; $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# throughput: $SIZE bytes per transfer, median of $RUNS (curl -o /dev/null)"
# CPU seconds (user + system) a process has used so far.
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }
declare -A speeds
proxy_cpu0=$(cpu "${pid_of[proxy]}")
copy_cpu0=$(cpu "${pid_of[copy]}")
for _ in $(seq "$RUNS"); do
  # Interleaved, so that a change in the machine's load hits every mode alike.
  speeds[direct]+="$(curl -sS -o /dev/null -w '%{speed_download}' "$URL") "
  speeds[forward]+="$(curl -sS -o /dev/null -w '%{speed_download}' -x "http://127.0.0.1:$PROXY" "$URL") "
  speeds[tunnel]+="$(curl -sS -o /dev/null -w '%{speed_download}' -p -x "http://127.0.0.1:$PROXY" "$URL") "
  speeds[copy]+="$(curl -sS -o /dev/null -w '%{speed_download}' -x "http://127.0.0.1:$COPY" "$URL") "
done
proxy_cpu=$(awk -v a="$proxy_cpu0" -v b="$(cpu "${pid_of[proxy]}")" 'BEGIN {print b - a}')
copy_cpu=$(awk -v a="$copy_cpu0" -v b="$(cpu "${pid_of[copy]}")" 'BEGIN {print b - a}')
direct=$(echo "${speeds[direct]}" | tr ' ' '\n' | grep . | median)
for mode in direct forward tunnel copy; do
  m=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | median)
  all=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | awk '{printf "%.0f ", $1/1048576}')
  label=$mode
  [ "$mode" = copy ] && label="forward, no splice"
  awk -v mode="$label" -v m="$m" -v d="$direct" -v all="$all" \
    'BEGIN {printf "%-20s %6.0f MiB/s  ratio %.2f  (runs, MiB/s: %s)\n", mode, m/1048576, m/d, all}'
done
gib=$(awk -v s="$SIZE" -v r="$RUNS" 'BEGIN {print s * r / 1073741824}')
awk -v c="$proxy_cpu" -v k="$copy_cpu" -v g="$gib" 'BEGIN {
  printf "# proxy CPU per GiB relayed: %.3f s with splice, %.3f s copying\n", c / (2 * g), k / g }'

echo "# latency of a new connection with one small request, $N sequential connections"
for via in direct forward connect socks5; do
  "$BIN" latency --target "127.0.0.1:$ORIGIN" --proxy "$PROXY" --via "$via" -n "$N"
done
