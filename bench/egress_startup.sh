#!/bin/sh
# Start-up cost of the network layer (issue 3): `ward run --allow-net HOST -- true` (proxy and
# DNS stub sockets created inside, handed to the supervisor, served) against `ward run -- true`
# (no egress at all), in one hyperfine run. Prints the ratio.
#   bench/egress_startup.sh [WARD] [RUNS]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
RUNS=${2:-40}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench-egress.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
pre=""
# The audit trail goes to a directory that outlives the bench (lib.sh: state_dir).
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
  stage_ward "$dir"
fi
cd "$dir/ws"
out=$dir/result.json
# shellcheck disable=SC2086
$pre hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$out" \
  -n no-net "$WARD run -- true" \
  -n allow-net "$WARD run --allow-net allowed.invalid -- true" >&2
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for n, x in r.items():
    print(f"{n:<10} median {x['median']*1000:7.2f} ms")
print(f"allow-net / no-net = {r['allow-net']['median'] / r['no-net']['median']:.2f}  (medians)")
PY
