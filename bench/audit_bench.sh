#!/bin/sh
# The cost of auditing a busy run (issue 4): a command inside `ward run` makes N connections
# through the egress proxy to a host no rule allows (each one a CONNECT answered 403 and a
# net.deny event) and N DNS queries for names the stub refuses; timed with the audit sink and
# with --no-audit, in one hyperfine run. Prints the ratio.
#   bench/audit_bench.sh [WARD] [RUNS]      env: N (10000)
set -eu
WARD=${1:-build/bin/ward}
RUNS=${2:-5}
N=${N:-10000}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench-audit.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/ws" "$dir/state"
cat > "$dir/ws/deny.py" <<'PY'
import os, socket, struct, sys
n = int(sys.argv[1])
proxy = ("127.0.0.1", int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1].strip("/")))
denied = 0
for i in range(n):
    s = socket.create_connection(proxy)
    s.sendall(b"CONNECT denied-%d.invalid:443 HTTP/1.1\r\nHost: denied-%d.invalid:443\r\n\r\n" % (i, i))
    if s.recv(64).startswith(b"HTTP/1.1 403"):
        denied += 1
    s.close()
# DNS: one UDP socket, queries for names the stub refuses.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("127.0.0.1", 53))
u.settimeout(2)
for i in range(n):
    name = b"".join(bytes([len(p)]) + p for p in (b"q%d" % i, b"denied", b"invalid")) + b"\0"
    u.send(struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1))
    u.recv(512)
if denied != n:
    sys.exit(f"only {denied} of {n} CONNECTs were denied")
PY
cd "$dir/ws"
out=$dir/result.json
# Some rule must exist for the proxy to run: allow one host the benchmark never uses.
common="run --allow-net allowed.invalid -- python3 deny.py $N"
XDG_STATE_HOME=$dir/state hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$out" \
  -n audit "$WARD $common" \
  -n no-audit "$WARD run --no-audit --allow-net allowed.invalid -- python3 deny.py $N" >&2
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for n, x in r.items():
    print(f"{n:<9} median {x['median']*1000:9.1f} ms")
print(f"audit / no-audit = {r['audit']['median'] / r['no-audit']['median']:.3f}  (medians)")
PY
echo "events in one audited run: $(cat "$dir"/state/ward/sessions/*/events.jsonl | wc -l) records in $(ls "$dir/state/ward/sessions" | wc -l) sessions" >&2
