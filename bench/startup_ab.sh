#!/bin/sh
# Start-up of `ward run -- true` (default profile) measured interleaved: one spawn of each
# command per iteration, the order reversed every other iteration (bench/interleave.c), so a
# drift of this machine falls on every command alike. Use it to compare two builds of ward
# (before and after a change) and each against bubblewrap in the same loop; bench/startup.sh
# gives the hyperfine figures and the slower peers.
#   bench/startup_ab.sh NEW_WARD [OLD_WARD] [N]      env: RUN_AS=<uid> (run unprivileged)
# Prints the medians, then NEW/bwrap and, with OLD_WARD, NEW/OLD and OLD/bwrap.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
NEW=${1:?usage: bench/startup_ab.sh NEW_WARD [OLD_WARD] [N]}
OLD=${2:-}
N=${3:-200}
here=$(cd "$(dirname "$0")" && pwd)
command -v bwrap >/dev/null || { echo "bwrap is needed (apt-get install bubblewrap)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
cc -O2 -o "$dir/interleave" "$here/interleave.c"
# Both builds run from the same directory, under names of the same length: the binaries are
# copies, so neither is favoured by the page cache or by where it lives.
cp "$NEW" "$dir/ward-new"
set -- "$dir/ward-new" run -- true
if [ -n "$OLD" ]; then
  cp "$OLD" "$dir/ward-old"
  set -- "$@" :: "$dir/ward-old" run -- true
fi
set -- "$@" :: bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent \
  --cap-drop ALL true
chmod 755 "$dir"/ward-* "$dir/interleave"
pre=""
# The audit trail goes to a directory that outlives the bench (lib.sh: state_dir).
use_state_dir
if [ -n "${RUN_AS:-}" ]; then
  chown "$RUN_AS" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi
cd "$dir/ws"
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 5 "$N" "$@" | tee "$dir/out"
python3 - "$dir/out" "${OLD:+old}" <<'PY'
import sys
med = [float(line.split()[0]) for line in open(sys.argv[1])]
if len(sys.argv) > 2 and sys.argv[2] == "old":
    new, old, bwrap = med
    print(f"new / bwrap = {new / bwrap:.3f}   new / old = {new / old:.3f}   old / bwrap = {old / bwrap:.3f}")
else:
    new, bwrap = med
    print(f"ward / bwrap = {new / bwrap:.3f}")
PY
