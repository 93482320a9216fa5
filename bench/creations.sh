#!/bin/sh
# Creation-heavy work: `tar xf` of a copy of /usr/include (thousands of files and directories,
# each one an O_CREAT open or a mkdir that the creation guard answers), bare and inside
# `ward run`, interleaved (bench/interleave.c). With OLD_WARD, the same under a second build, to
# compare the guard's cost between two builds. The workspace is on a tmpfs of the bench's own
# when run as root (a disk's allocator, after thousands of files were just deleted, would
# measure the last round's cleanup), else in /tmp.
#   bench/creations.sh [WARD] [OLD_WARD] [N]      env: RUN_AS=<uid> (run unprivileged)
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WARD=${1:-build/bin/ward}
OLD=${2:-}
N=${3:-10}
case $N in '' | *[!0-9]*) echo "N must be a number of rounds, got '$N'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
cleanup() {
  cd /
  if mountpoint -q "$dir/ws" 2>/dev/null; then umount "$dir/ws"; fi
  rm -rf "$dir"
}
trap cleanup EXIT
chmod 755 "$dir"
mkdir -p "$dir/ws" "$dir/home"
if [ "$(id -u)" = 0 ]; then mount -t tmpfs -o size=1g,mode=0755 tmpfs "$dir/ws"; fi
cc -O2 -o "$dir/interleave" "$here/interleave.c"
tar cf "$dir/ws/include.tar" -C /usr include 2>/dev/null
echo "$(tar tf "$dir/ws/include.tar" | wc -l) entries, $(du -m "$dir/ws/include.tar" | cut -f1) MB" >&2
cp "$WARD" "$dir/ward-new"
[ -z "$OLD" ] || cp "$OLD" "$dir/ward-old"
chmod 755 "$dir"/ward-* "$dir/interleave"
# extract.sh NAME CMD...: tar xf into a fresh out-NAME under CMD (the previous round's output
# is removed first, alike for every command).
cat > "$dir/extract.sh" <<'EOF'
#!/bin/sh
set -e
out=out-$1
shift
rm -rf "$out"
mkdir "$out"
exec "$@" tar xf include.tar -C "$out"
EOF
chmod 755 "$dir/extract.sh"
use_state_dir
pre=""
if [ -n "${RUN_AS:-}" ]; then
  chown -R "$RUN_AS" "$dir/ws" "$dir/home"
  pre="$(as_user "$RUN_AS") env HOME=$dir/home"
fi
cd "$dir/ws"
set -- "$dir/extract.sh" bare env :: "$dir/extract.sh" new "$dir/ward-new" run --
[ -z "$OLD" ] || set -- "$@" :: "$dir/extract.sh" old "$dir/ward-old" run --
# shellcheck disable=SC2086
$pre "$dir/interleave" -w 1 "$N" "$@" | tee "$dir/out"
python3 - "$dir/out" "${OLD:+old}" <<'PY'
import sys
med = [float(line.split()[0]) for line in open(sys.argv[1])]
if len(sys.argv) > 2 and sys.argv[2] == "old":
    bare, new, old = med
    print(f"new / bare = {new / bare:.2f}   new / old = {new / old:.3f}   old / bare = {old / bare:.2f}")
else:
    bare, new = med
    print(f"ward / bare = {new / bare:.2f}")
PY
