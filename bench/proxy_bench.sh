#!/usr/bin/env bash
# Egress proxy figures on loopback, without a sandbox (issue 3):
#  1. throughput of one large HTTP transfer (default 1 GiB) from a local origin, direct vs
#     through the proxy (absolute-URI forwarding, and a CONNECT tunnel), allowed by address;
#     for reference, the same proxy copying through user space, the same proxy keeping the
#     system's TCP congestion control on its client side, and a bare splice(2) relay (no
#     protocol, no policy): what relaying costs at least on this machine;
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
# The same proxy with the system's congestion control on the client side (BBR paces).
start syscc proxy --system-cc --allow "127.0.0.1:$ORIGIN"
SYSCC=$(wait_port syscc)
# A bare splice relay to the origin (the least CPU per byte); curl asks it for the URL directly.
start relay relay --to "$ORIGIN"
RELAY=$(wait_port relay)
URL="http://127.0.0.1:$ORIGIN/bytes/$SIZE"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "# ward egress proxy, loopback; $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# throughput: $SIZE bytes per transfer, median of $RUNS (curl -o /dev/null); ratio: the"
echo "# median over rounds of the transfer's speed over that round's direct one"
# CPU seconds (user + system) a process has used so far.
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }
declare -A speeds cpu_origin cpu_proxy cpu_curl
# One transfer: records its speed and the CPU each process spent on it. URL may be overridden.
transfer() {
  local mode=$1 proxy_pid=$2
  shift 2
  local url=${TRANSFER_URL:-$URL}
  local o0 p0 o1 p1 out
  o0=$(cpu "${pid_of[origin]}")
  p0=0
  [ -n "$proxy_pid" ] && p0=$(cpu "$proxy_pid")
  # curl's own CPU from its rusage, via bash's `times` in a subshell.
  out=$( (curl -sS -o /dev/null -w '%{speed_download}' "$@" "$url"; echo; times) )
  o1=$(cpu "${pid_of[origin]}")
  p1=0
  [ -n "$proxy_pid" ] && p1=$(cpu "$proxy_pid")
  speeds[$mode]+="$(echo "$out" | head -1) "
  cpu_origin[$mode]=$(awk -v a="${cpu_origin[$mode]:-0}" -v d="$(awk -v x="$o0" -v y="$o1" 'BEGIN {print y - x}')" 'BEGIN {print a + d}')
  cpu_proxy[$mode]=$(awk -v a="${cpu_proxy[$mode]:-0}" -v d="$(awk -v x="$p0" -v y="$p1" 'BEGIN {print y - x}')" 'BEGIN {print a + d}')
  # `times` prints the shell's then its children's "XmY.YYYs XmY.YYYs"; the last line is curl.
  local c
  c=$(echo "$out" | tail -1 | awk '{
        n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
        print n }')
  cpu_curl[$mode]=$(awk -v a="${cpu_curl[$mode]:-0}" -v d="$c" 'BEGIN {print a + d}')
}
for _ in $(seq "$RUNS"); do
  # Interleaved, so that a change in the machine's load hits every mode alike.
  transfer direct ""
  transfer forward "${pid_of[proxy]}" -x "http://127.0.0.1:$PROXY"
  transfer tunnel "${pid_of[proxy]}" -p -x "http://127.0.0.1:$PROXY"
  transfer copy "${pid_of[copy]}" -x "http://127.0.0.1:$COPY"
  transfer syscc "${pid_of[syscc]}" -x "http://127.0.0.1:$SYSCC"
  TRANSFER_URL="http://127.0.0.1:$RELAY/bytes/$SIZE" transfer relay "${pid_of[relay]}"
done
# Per round, so that a change in the machine's load between rounds cancels out.
ratio() {
  paste -d' ' <(echo "${speeds[$1]}" | tr ' ' '\n' | grep .) \
    <(echo "${speeds[direct]}" | tr ' ' '\n' | grep .) | awk '{print $1 / $2}' | median
}
gib=$(awk -v s="$SIZE" -v r="$RUNS" 'BEGIN {print s * r / 1073741824}')
printf "%-26s %11s %7s   %s\n" mode median ratio "CPU s/GiB: origin proxy curl = sum (runs, MiB/s)"
for mode in direct forward tunnel copy syscc relay; do
  m=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | median)
  all=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | awk '{printf "%.0f ", $1/1048576}')
  case $mode in
    copy) label="forward, no splice" ;;
    syscc) label="forward, system TCP cc" ;;
    relay) label="bare splice relay" ;;
    *) label=$mode ;;
  esac
  awk -v mode="$label" -v m="$m" -v r="$(ratio "$mode")" -v all="$all" -v g="$gib" \
    -v co="${cpu_origin[$mode]}" -v cp="${cpu_proxy[$mode]}" -v cc="${cpu_curl[$mode]}" \
    'BEGIN {printf "%-26s %5.0f MiB/s %7.2f   %.3f %.3f %.3f = %.3f  (%s)\n",
            mode, m/1048576, r, co/g, cp/g, cc/g, (co+cp+cc)/g, all}'
done

echo "# latency of a new connection with one small request, $N sequential connections"
for via in direct forward connect socks5; do
  "$BIN" latency --target "127.0.0.1:$ORIGIN" --proxy "$PROXY" --via "$via" -n "$N"
done
