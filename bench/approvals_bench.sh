#!/bin/sh
# Cost of a trapped open (issue 7): per open+close pair, in microseconds, measured inside the
# sandbox by `ward-probe open-loop PATH N`:
#   untrapped      no --ask: an open the view allows never leaves the kernel
#   ask-continue   --ask, a path the view allows: trapped, answered CONTINUE by the notifier
#   ask-granted    --ask, a host path outside the view covered by a standing session grant
#                  (the first open is approved with scope session through the approval
#                  socket; the N measured opens are then opened by the supervisor and injected)
# Prints one line per case and the ratios to untrapped.
#   bench/approvals_bench.sh [WARD] [PROBE] [N]     (default N = 100000)
set -eu
WARD=${1:-build/bin/ward}
PROBE=${2:-build/bin/ward-probe}
N=${3:-100000}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
PROBE=$(cd "$(dirname "$PROBE")" && pwd)/$(basename "$PROBE")
dir=$(mktemp -d /tmp/ward-bench-approvals.XXXXXX)
# Outside the sandbox's view and outside ward's own trees (the private /tmp and HOME).
outside=$(mktemp -d /run/lock/ward-bench-approvals.XXXXXX)
trap 'rm -rf "$dir" "$outside"' EXIT
mkdir -p "$dir/ws" "$dir/run" "$dir/bin"
chmod 700 "$dir/run"
cp "$PROBE" "$dir/bin/ward-probe"
echo data > "$dir/ws/file"
echo data > "$outside/file"
cd "$dir/ws"
export XDG_RUNTIME_DIR="$dir/run"
run() { "$WARD" run --no-audit -r "$dir/bin" "$@"; }
us() { sed -n 's/.*us_per_open=\([0-9.]*\).*/\1/p'; }

untrapped=$(run -- "$dir/bin/ward-probe" open-loop "$dir/ws/file" "$N" | us)
cont=$(run --ask -- "$dir/bin/ward-probe" open-loop "$dir/ws/file" "$N" | us)

# The approver: approve the first request on the session's socket with scope session.
python3 - "$dir/run/ward" <<'PY' &
import glob, json, socket, sys, time
d = sys.argv[1]
deadline = time.time() + 60
while time.time() < deadline:
    for path in glob.glob(d + "/approvals-*.sock"):
        try:
            s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rw")
            f.write(json.dumps({"op": "list"}) + "\n"); f.flush()
            reqs = json.loads(f.readline()).get("requests", [])
            for r in reqs:
                f.write(json.dumps({"op": "approve", "id": r["id"], "scope": "session"}) + "\n")
                f.flush(); f.readline()
                sys.exit(0)
        except OSError:
            pass
    time.sleep(0.01)
sys.exit(1)
PY
approver=$!
granted=$(run --ask -- /bin/sh -c "'$dir/bin/ward-probe' read '$outside/file' >/dev/null && '$dir/bin/ward-probe' open-loop '$outside/file' $N" | us)
wait "$approver" || true

python3 - "$untrapped" "$cont" "$granted" "$N" <<'PY'
import sys
u, c, g, n = (float(x) if x else float("nan") for x in sys.argv[1:5])
print(f"opens per case: {int(n)}")
print(f"untrapped     {u:8.3f} us/open")
print(f"ask-continue  {c:8.3f} us/open  ({c / u:.1f}x)")
print(f"ask-granted   {g:8.3f} us/open  ({g / u:.1f}x)")
PY
