#!/bin/sh
# Start-up cost of `ward run -- true` on the default profile against bare `true`, bubblewrap
# with every namespace, and the peers installed by the shared peers/install.sh (srt, Codex's
# sandbox, landrun, firejail) when present. One hyperfine run; prints ratios.
#   bench/startup.sh [WARD] [RUNS]      env: PEERS=/tmp/peers RUN_AS=<uid> (run unprivileged)
set -eu
WARD=${1:-build/bin/ward}
RUNS=${2:-40}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
PEERS=${PEERS:-/tmp/peers}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
# The workspace and the unprivileged user's HOME are separate: an audit directory under HOME
# must not be inside the workspace (ward refuses a run whose sandbox would see its own log).
mkdir -p "$dir/ws" "$dir/home"
pre=""
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir" "$dir/ws" "$dir/home"
  pre="setpriv --reuid=$RUN_AS --regid=$(id -g "$RUN_AS" 2>/dev/null || echo "$RUN_AS") --clear-groups env HOME=$dir/home XDG_STATE_HOME=$dir/home/.local/state"
  # The binary must be reachable by that user.
  cp "$WARD" "$dir/ward"; chmod 755 "$dir/ward"; WARD=$dir/ward
fi
cd "$dir/ws"
set -- -n bare "true" \
       -n ward "$WARD run -- true" \
       -n ward-no-audit "$WARD run --no-audit -- true" \
       -n bwrap "bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent --cap-drop ALL true"
RO='{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}'
if [ -x "$PEERS/bin/srt" ]; then
  set -- "$@" -n srt "$PEERS/bin/srt --settings $PEERS/cfg/srt-none.json true"
fi
if [ -x "$PEERS/bin/codex-linux-sandbox" ]; then
  set -- "$@" -n codex-helper "$PEERS/bin/codex-linux-sandbox --sandbox-policy-cwd $dir/ws --command-cwd $dir/ws --permission-profile '$RO' -- true"
fi
if [ -x "$PEERS/bin/codex-sbx" ]; then
  set -- "$@" -n codex "env CODEX_HOME=/var/tmp/peers-codex-home-$(id -u ${RUN_AS:-}) $PEERS/bin/codex-sbx sandbox -- true"
fi
out=$dir/result.json
# shellcheck disable=SC2086
$pre hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$out" "$@" >&2
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
def m(n): return r[n]["mean"] * 1000
print(f"{'command':<14} {'mean ms':>8} {'median ms':>9}")
for n, x in r.items():
    print(f"{n:<14} {x['mean']*1000:8.2f} {x['median']*1000:9.2f}")
w = r["ward"]["median"]
print()
for other in r:
    if other != "ward":
        print(f"ward / {other:<13} = {w / r[other]['median']:.2f}  (medians)")
PY
