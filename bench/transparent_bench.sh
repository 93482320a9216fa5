#!/usr/bin/env bash
# Transparent capture's figures on loopback (issue 39), one interleaved run:
#  1. throughput of one large HTTP transfer (default 1 GiB) from an origin on the host's
#     loopback: direct (curl on the host), proxied (curl inside `ward run`, through the proxy
#     variables) and transparent (the same curl with --noproxy, by name), with the CPU seconds
#     per GiB of the origin and of the rest (curl; inside ward: the supervisor, sandbox init and
#     curl, a whole run's cost with its start-up);
#  2. the latency of a new connection with one small request (p50, p99): direct on the host,
#     through the proxy's CONNECT inside a sandbox, and transparent inside a sandbox.
#
# Usage: bench/transparent_bench.sh [BUILD_DIR]   (ward, ward_proxy_bench and curl needed)
# Environment: RUNS (5 transfers per mode, median reported), SIZE (bytes, 1073741824),
#              N (connections per latency mode, 2000).
set -euo pipefail

BUILD=$(cd "${1:-build}" && pwd)
WARD="$BUILD/bin/ward"
BIN="$BUILD/bench/ward_proxy_bench"
RUNS=${RUNS:-5}
SIZE=${SIZE:-1073741824}
N=${N:-2000}
[ -x "$BIN" ] || { echo "missing $BIN: cmake --build $BUILD --target ward_proxy_bench" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 2; }

tmp=$(mktemp -d /tmp/ward-bench-transparent.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/ws"
origin_pid=
cleanup() {
  [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"$BIN" origin >"$tmp/origin.out" 2>"$tmp/origin.err" &
origin_pid=$!
for _ in $(seq 100); do grep -q '^listening ' "$tmp/origin.out" 2>/dev/null && break; sleep 0.05; done
PORT=$(awk '/^listening /{print $2}' "$tmp/origin.out")
[ -n "$PORT" ] || { echo "origin did not start: $(cat "$tmp/origin.err")" >&2; exit 1; }
NAME=bench.test
URL="http://$NAME:$PORT/bytes/$SIZE"
sandbox=("$WARD" run --no-audit -r "$BUILD/bench" -n "$NAME:$PORT" -n "127.0.0.1:$PORT"
         --resolve "$NAME:127.0.0.1" --)
cd "$tmp/ws"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }
declare -A speeds cpu_origin cpu_rest
# One transfer: its speed, the origin's CPU and the CPU of everything else it ran (`times`).
transfer() {
  local mode=$1
  shift
  local o0 o1 out
  o0=$(cpu "$origin_pid")
  out=$( ("$@"; echo; times) )
  o1=$(cpu "$origin_pid")
  speeds[$mode]+="$(echo "$out" | head -1) "
  cpu_origin[$mode]=$(awk -v a="${cpu_origin[$mode]:-0}" -v x="$o0" -v y="$o1" 'BEGIN {print a + y - x}')
  local c
  c=$(echo "$out" | tail -1 | awk '{
        n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
        print n }')
  cpu_rest[$mode]=$(awk -v a="${cpu_rest[$mode]:-0}" -v d="$c" 'BEGIN {print a + d}')
}
curl_get=(curl -sS -o /dev/null -w '%{speed_download}')
for _ in $(seq "$RUNS"); do
  # Interleaved, so that a change in the machine's load hits every mode alike.
  transfer direct "${curl_get[@]}" --resolve "$NAME:$PORT:127.0.0.1" "$URL"
  transfer proxied "${sandbox[@]}" "${curl_get[@]}" "$URL"
  transfer transparent "${sandbox[@]}" "${curl_get[@]}" --noproxy '*' "$URL"
done

echo "# ward transparent capture, loopback; $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# throughput: $SIZE bytes per transfer, median of $RUNS; ratio: median over rounds of the"
echo "# transfer's speed over that round's direct one"
ratio() {
  paste -d' ' <(echo "${speeds[$1]}" | tr ' ' '\n' | grep .) \
    <(echo "${speeds[direct]}" | tr ' ' '\n' | grep .) | awk '{print $1 / $2}' | median
}
gib=$(awk -v s="$SIZE" -v r="$RUNS" 'BEGIN {print s * r / 1073741824}')
printf "%-12s %11s %7s   %s\n" mode median ratio "CPU s/GiB: origin + rest = sum (runs, MiB/s)"
for mode in direct proxied transparent; do
  m=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | median)
  all=$(echo "${speeds[$mode]}" | tr ' ' '\n' | grep . | awk '{printf "%.0f ", $1/1048576}')
  awk -v mode="$mode" -v m="$m" -v r="$(ratio "$mode")" -v all="$all" -v g="$gib" \
    -v co="${cpu_origin[$mode]}" -v cr="${cpu_rest[$mode]}" \
    'BEGIN {printf "%-12s %5.0f MiB/s %7.2f   %.3f + %.3f = %.3f  (%s)\n",
            mode, m/1048576, r, co/g, cr/g, (co+cr)/g, all}'
done

echo "# latency of a new connection with one small request, $N sequential connections"
"$BIN" latency --target "127.0.0.1:$PORT" --via direct -n "$N"
"${sandbox[@]}" "$BIN" latency --target "$NAME:$PORT" --proxy 3128 --via connect -n "$N" |
  sed 's/^connect/proxied (connect, in ward)/'
"${sandbox[@]}" "$BIN" latency --target "$NAME:$PORT" --via transparent -n "$N" |
  sed 's/^transparent/transparent (in ward)/'
