#!/bin/sh
# Start-up cost of `ward run -- true` on the default profile against bare `true`, bubblewrap
# with every namespace, and the peers installed by the shared peers/install.sh (srt, Codex's
# sandbox, landrun, firejail) when present. One hyperfine run; prints ratios.
# A shared or noisy machine drifts between hyperfine's batches (all runs of one command, then
# all of the next): the core commands (bare, ward, bwrap) are measured in ROUNDS rounds of RUNS
# runs each, in alternating order, and the figure is the median of the rounds' ratios. The
# peers, hundreds of times slower, run once, in the first round.
#   bench/startup.sh [WARD] [RUNS]      env: PEERS=/tmp/peers RUN_AS=<uid> (run unprivileged)
#                                            ROUNDS=5
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
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
# The audit trail goes to a directory that outlives the bench (lib.sh: state_dir).
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
  # The binary must be reachable by that user.
  stage_ward "$dir"
fi
cd "$dir/ws"
ROUNDS=${ROUNDS:-5}
BWRAP="bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent --cap-drop ALL true"
RO='{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}'
round=1
while [ "$round" -le "$ROUNDS" ]; do
  if [ $((round % 2)) -eq 1 ]; then
    set -- -n bare "true" -n ward "$WARD run -- true" -n ward-no-audit "$WARD run --no-audit -- true" \
           -n bwrap "$BWRAP"
  else
    set -- -n bwrap "$BWRAP" -n ward-no-audit "$WARD run --no-audit -- true" \
           -n ward "$WARD run -- true" -n bare "true"
  fi
  if [ "$round" -eq 1 ]; then
    if [ -x "$PEERS/bin/srt" ]; then
      set -- "$@" -n srt "$PEERS/bin/srt --settings $PEERS/cfg/srt-none.json true"
    fi
    if [ -x "$PEERS/bin/codex-linux-sandbox" ]; then
      set -- "$@" -n codex-helper "$PEERS/bin/codex-linux-sandbox --sandbox-policy-cwd $dir/ws --command-cwd $dir/ws --permission-profile '$RO' -- true"
    fi
    if [ -x "$PEERS/bin/codex-sbx" ]; then
      # shellcheck disable=SC2086  # RUN_AS unset: `id -u` alone, this user's id
      set -- "$@" -n codex "env CODEX_HOME=/var/tmp/peers-codex-home-$(id -u ${RUN_AS:-}) $PEERS/bin/codex-sbx sandbox -- true"
    fi
  fi
  # shellcheck disable=SC2086
  $pre hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$dir/round$round.json" "$@" >&2
  round=$((round + 1))
done
python3 - "$dir" "$ROUNDS" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
rounds = [{x["command"]: x for x in json.load(open(f"{d}/round{i}.json"))["results"]}
          for i in range(1, n + 1)]
names = list(rounds[0])
print(f"{'command':<14} {'median ms':>9}  (median over the rounds it ran in)")
med = {}
for c in names:
    vals = [r[c]["median"] * 1000 for r in rounds if c in r]
    med[c] = statistics.median(vals)
    print(f"{c:<14} {med[c]:9.2f}")
print()
for other in ("bare", "ward-no-audit", "bwrap"):
    ratios = [r["ward"]["median"] / r[other]["median"] for r in rounds]
    print(f"ward / {other:<13} = {statistics.median(ratios):.2f}  (median of {n} rounds: "
          + " ".join(f"{x:.2f}" for x in ratios) + ")")
for other in names:
    if other not in ("ward", "bare", "ward-no-audit", "bwrap"):
        print(f"ward / {other:<13} = {med['ward'] / med[other]:.2f}  (first round)")
PY
