#!/bin/sh
# Start-up cost of resource limits: `ward run --memory 1G --pids 100 -- true` against the same
# run without limits (a profile like the default one minus its [limits]), and the default
# profile (which sets memory, pids and tmp_size) for reference. One hyperfine run; prints the
# mechanism `ward check` reports and the ratios. As root on a v1/hybrid host the limits take a
# cgroup; unprivileged (RUN_AS) they are rlimits.
#   bench/limits_startup.sh [WARD] [RUNS]      env: RUN_AS=<user> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
RUNS=${2:-60}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench-limits.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
pre=""
# The audit trail goes to a directory that outlives the bench (lib.sh: state_dir).
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
  stage_ward "$dir"
fi
mkdir -p "$dir/ws" "$dir/home"
[ -n "${RUN_AS:-}" ] && chown "$RUN_AS" "$dir/ws" "$dir/home"
# The default profile's filesystem view without its [limits]: the baseline.
cat > "$dir/nolimits.toml" <<'EOF'
description = "benchmark: the default view, no resource limits"
[filesystem]
read = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"]
EOF
chmod 644 "$dir/nolimits.toml"
cd "$dir/ws"
echo "limits via: $($pre "$WARD" check --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits_mechanism"])')" >&2
out=$dir/result.json
# shellcheck disable=SC2086
$pre hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$out" \
  -n no-limits "$WARD run --no-audit -p $dir/nolimits.toml -- true" \
  -n limits "$WARD run --no-audit -p $dir/nolimits.toml --memory 1G --pids 100 -- true" \
  -n default-profile "$WARD run --no-audit -- true" >&2
python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
print(f"{'command':<16} {'mean ms':>8} {'median ms':>9} {'stddev':>7}")
for n, x in r.items():
    print(f"{n:<16} {x['mean']*1000:8.2f} {x['median']*1000:9.2f} {x['stddev']*1000:7.2f}")
base = r["no-limits"]["median"]
print()
print(f"limits / no-limits = {r['limits']['median'] / base:.3f}  (medians; "
      f"+{(r['limits']['median'] - base) * 1000:.2f} ms)")
print(f"default-profile / no-limits = {r['default-profile']['median'] / base:.3f}")
PY
