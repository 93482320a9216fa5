#!/bin/sh
# Start-up cost of transparent capture (issue 39): `ward run -n HOST -- true` with capture (the
# default: routes and an nftables rule in the sandbox's namespace, a third listener) against the
# same run with `network.transparent = false`, interleaved (bench/interleave.c), one binary, the
# two profiles differing in that key only. Prints the medians and the ratio.
#   bench/transparent_startup.sh [WARD] [N]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
N=${2:-200}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ward-bench-capture.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
cc -O2 -o "$dir/interleave" "$here/interleave.c"
for t in true false; do
  printf 'extends = "default"\n[network]\nallow = ["allowed.invalid"]\ntransparent = %s\n' "$t" \
    >"$dir/capture-$t.toml"
done
chmod 644 "$dir"/*.toml
stage_ward "$dir"
pre=""
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi
cd "$dir/ws"
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 5 "$N" "$WARD" run -p "$dir/capture-true.toml" -- true :: \
  "$WARD" run -p "$dir/capture-false.toml" -- true | tee "$dir/out"
python3 - "$dir/out" <<'PY'
import sys
on, off = [float(line.split()[0]) for line in open(sys.argv[1])]
print(f"capture / no capture = {on / off:.3f}  (medians)")
PY
