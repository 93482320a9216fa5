#!/bin/sh
# Review mode (`ward run --workspace=overlay`) against direct mode, interleaved (one spawn of each
# per iteration, the order reversed every other one: bench/interleave.c):
#   1. start-up: `ward run -- true`;
#   2. `npm install` of a small project whose dependencies are local tarballs (made here with
#      `npm pack`: no registry, no network; npm runs --offline).
# Before each npm run the project's node_modules and lock file are moved out of the way (in both
# modes; in review mode the host's project never gets them). Moved, not removed: on a file system
# mounted with `discard` a removal waits for the device, which would fall on direct mode only.
#   bench/overlay_ab.sh WARD [N_TRUE] [N_NPM]      env: RUN_AS=<uid> (run unprivileged)
# Prints each loop's medians and the ratio overlay / direct. A review session that a run leaves
# (the npm runs) is removed at the end; a `true` run changes nothing and leaves none.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:?usage: bench/overlay_ab.sh WARD [N_TRUE] [N_NPM]}
N_TRUE=${2:-300}
N_NPM=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
command -v npm >/dev/null || { echo "npm is needed for the second loop" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home" "$dir/proj/deps"
cc -O2 -o "$dir/interleave" "$here/interleave.c"
stage_ward "$dir"
chmod 755 "$dir/interleave"

# The project: six dependencies of 40 small files each, packed as tarballs.
deps=""
for i in 0 1 2 3 4 5; do
  p="$dir/src/dep$i"
  mkdir -p "$p/lib"
  printf '{"name":"dep%s","version":"1.0.0","main":"lib/f0.js"}\n' "$i" >"$p/package.json"
  for f in $(seq 0 39); do
    head -c 1500 /dev/urandom | base64 >"$p/lib/f$f.js"
  done
  (cd "$dir/proj/deps" && npm pack --silent "$p" >/dev/null)
  deps="$deps${deps:+,}\"dep$i\":\"file:deps/dep$i-1.0.0.tgz\""
done
printf '{"name":"proj","version":"1.0.0","private":true,"dependencies":{%s}}\n' "$deps" \
  >"$dir/proj/package.json"

use_state_dir
pre=""
mkdir -p "$dir/trash"
if [ -n "${RUN_AS:-}" ]; then
  chown -R "$RUN_AS" "$dir/ws" "$dir/home" "$dir/proj" "$dir/trash"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi

ratio() {
  python3 - "$1" <<'PY'
import sys
med = [float(line.split()[0]) for line in open(sys.argv[1])]
print(f"overlay / direct = {med[1] / med[0]:.3f}")
PY
}

echo "== start-up: ward run -- true ($N_TRUE rounds)"
cd "$dir/ws"
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 5 "$N_TRUE" "$WARD" run -- true :: \
  "$WARD" run --workspace=overlay -- true | tee "$dir/out-true"
ratio "$dir/out-true"

echo "== npm install of 6 local tarball dependencies ($N_NPM rounds)"
cd "$dir/proj"
npm_cmd="npm install --offline --no-audit --no-fund --install-links --loglevel=error"
reset="t=\$(mktemp -d $dir/trash/XXXXXX) && mv node_modules package-lock.json \$t/ 2>/dev/null; true"
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 2 "$N_NPM" \
  sh -c "$reset && exec $WARD run -- $npm_cmd" :: \
  sh -c "$reset && exec $WARD run --workspace=overlay -- $npm_cmd" | tee "$dir/out-npm"
ratio "$dir/out-npm"
rm -rf "$XDG_STATE_HOME/ward/review"
