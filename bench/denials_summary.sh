#!/bin/sh
# The end-of-run summary of a run with many denials: the command makes 10,000 refused creations
# in distinct paths (read-only /usr, answered by the creation guard) and 10,000 refused
# connections to distinct hosts through the proxy (-n allowed.test makes it exist; every host is
# refused before any name is resolved: nothing leaves the machine). ward's trace marks
# (WARD_TRACE_TIMING=1, src/common/trace.h) time the two phases of the summary: gathering the
# tally into sorted entries at the end of the run ("run over" -> "denials gathered"; the per-event counting happens during the run, as each event passes the
# tee) and building and printing the lines ("summary start" -> "summary printed").
#   bench/denials_summary.sh [WARD] [ROUNDS]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
ROUNDS=${2:-5}
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
stage_ward "$dir"
cat > "$dir/deny.py" <<'PY'
import os, socket, urllib.parse
for i in range(10000):
    try:
        os.close(os.open("/usr/ward-bench-refused-%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        pass
proxy = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
for i in range(10000):
    s = socket.create_connection((proxy.hostname, proxy.port))
    host = "h%d.refused.test:443" % i
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, host)).encode())
    s.recv(4096)
    s.close()
PY
chmod 644 "$dir/deny.py"
pre=""
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi
cd "$dir/ws"
# ms between the first mark named $2 (any of the |-separated names) and the mark $3, in file $1.
between() {
  awk -v from="$2" -v to="$3" '
    /^ward: \+/ { t = substr($2, 2) + 0; name = $0; sub(/^ward: \+[0-9.]+ ms /, "", name);
                  sub(/ \[[0-9]+\]$/, "", name);
                  n = split(from, f, "|"); for (i = 1; i <= n; i++) if (name == f[i]) a = t;
                  if (name == to) b = t }
    END { if (a == "" || b == "") print "?"; else printf "%.2f\n", b - a }' "$1"
}
echo "round  gather_ms  print_ms  summary_lines" >&2
i=0
while [ "$i" -lt "$ROUNDS" ]; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  WARD_TRACE_TIMING=1 $pre "$WARD" run -n allowed.test -r "$dir" -- python3 "$dir/deny.py" \
    2>"$dir/err" || true
  gather=$(between "$dir/err" "run over" "denials gathered")
  print=$(between "$dir/err" "summary start" "summary printed")
  lines=$(grep -c '^ward: blocked\|^ward: and ' "$dir/err" || true)
  echo "$i  $gather  $print  $lines"
done
