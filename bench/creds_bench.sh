#!/usr/bin/env bash
# Credential broker figures on loopback, without a sandbox (issue 6): requests per second and
# p50/p99 latency per request to one local HTTPS upstream
#   tunnel     a plain CONNECT tunnel (TLS end to end, the proxy relays bytes) - the baseline;
#   route      plain HTTP to http://127.0.0.1:PORT/bench/... (the broker's TLS to the upstream);
#   intercept  CONNECT to the credential's host, TLS terminated with the session CA, the
#              phantom replaced, TLS again to the upstream;
#   direct     TLS straight to the upstream (no proxy), for reference;
# each on keep-alive connections (1 and 8 clients) and with a new connection per request
# (every TLS handshake paid). Ratios are against the tunnel.
#
# Usage: bench/creds_bench.sh [BUILD_DIR]     (needs the ward_creds_bench target)
# Environment: N (requests per keep-alive mode, 20000), NF (per fresh-connection mode, 2000),
#              RUNS (3; the median run by rps is reported).
set -euo pipefail

BUILD=${1:-build}
BIN="$BUILD/bench/ward_creds_bench"
N=${N:-20000}
NF=${NF:-2000}
RUNS=${RUNS:-3}
[ -x "$BIN" ] || { echo "missing $BIN: cmake --build $BUILD --target ward_creds_bench" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

start() {
  local name=$1
  shift
  "$BIN" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
}
wait_listening() {
  for _ in $(seq 100); do
    if grep -q '^listening ' "$tmp/$1.out" 2>/dev/null; then
      sed -n 's/^listening //p' "$tmp/$1.out"
      return
    fi
    sleep 0.05
  done
  echo "$1 did not start: $(cat "$tmp/$1.err")" >&2
  exit 1
}

start upstream upstream --ca-out "$tmp/upstream-ca.pem"
read -r P1 P2 <<<"$(wait_listening upstream)"
start proxy proxy --upstream-port "$P1" --upstream-ca "$tmp/upstream-ca.pem" --ca-out "$tmp/session-ca.pem"
PROXY=$(wait_listening proxy)
PHANTOM=$(cat "$tmp/session-ca.pem.phantom")

# load VIA C FRESH: prints "rps p50 p99" of the median run (by rps).
load() {
  local via=$1 c=$2 fresh=$3 n=$N port=$P1 ca="$tmp/upstream-ca.pem" key=()
  [ "$fresh" = fresh ] && n=$NF
  case $via in
    tunnel) port=$P2 ;;
    intercept) ca="$tmp/session-ca.pem"; key=(--key "$PHANTOM") ;;
    route) key=(--key "$PHANTOM") ;;
  esac
  local args=(load --proxy "$PROXY" --via "$via" --port "$port" --ca "$ca" -n "$n" -c "$c")
  [ "$fresh" = fresh ] && args+=(--fresh)
  for _ in $(seq "$RUNS"); do
    "$BIN" "${args[@]}" "${key[@]}"
  done | sed -E 's/.*rps=([0-9.]+) p50_us=([0-9.]+) p99_us=([0-9.]+).*/\1 \2 \3/' |
    sort -g | awk '{l[NR]=$0} END {print l[int((NR+1)/2)]}'
}

echo "# ward credential broker, loopback; $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# N=$N keep-alive requests, NF=$NF fresh connections per mode; median of $RUNS runs"
printf "%-10s %-10s %3s %9s %9s %9s   %s\n" mode conn c rps p50_us p99_us "ratio to tunnel: rps p50 p99"
for spec in "keepalive 1" "keepalive 8" "fresh 1"; do
  read -r conn c <<<"$spec"
  read -r base_rps base_p50 base_p99 <<<"$(load tunnel "$c" "$conn")"
  for via in tunnel route intercept direct; do
    if [ "$via" = tunnel ]; then
      rps=$base_rps p50=$base_p50 p99=$base_p99
    else
      read -r rps p50 p99 <<<"$(load "$via" "$c" "$conn")"
    fi
    awk -v m="$via" -v k="$conn" -v c="$c" -v r="$rps" -v a="$p50" -v b="$p99" \
      -v R="$base_rps" -v A="$base_p50" -v B="$base_p99" \
      'BEGIN {printf "%-10s %-10s %3d %9.0f %9.1f %9.1f   %.2f %.2f %.2f\n", m, k, c, r, a, b, r/R, a/A, b/B}'
  done
done
