#!/bin/sh
# With ward as the runtime (a ward-oci link) against runc, measured interleaved
# (bench/interleave.c: one run of each per iteration, the order reversed every other one):
#  - start-up, `podman run --rm IMG true`;
#  - exec latency, `podman exec ID true` in a running container of each runtime.
# Both get the same flags: --network none, and rlimits within the hard limits (runc fails on
# podman's defaults where root lacks CAP_SYS_RESOURCE; ward clamps them).
#   bench/oci_podman.sh WARD [N]          (as root; podman and runc installed)
set -eu
WARD=${1:?usage: bench/oci_podman.sh WARD [N]}
N=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ward-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cc -O2 -o "$dir/interleave" "$here/interleave.c"
cp "$WARD" "$dir/ward" && ln -s ward "$dir/ward-oci"
mkdir -p "$dir/rootfs/bin"
cp /bin/busybox "$dir/rootfs/bin/"
for applet in true sleep; do ln -s busybox "$dir/rootfs/bin/$applet"; done
tar -C "$dir/rootfs" -cf "$dir/rootfs.tar" .
image=localhost/ward-bench:latest
podman import -q "$dir/rootfs.tar" "$image" >/dev/null
limits="--network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
flags="run --rm $limits $image /bin/true"
# shellcheck disable=SC2086
"$dir/interleave" -w 3 "$N" podman --runtime "$dir/ward-oci" $flags :: \
  podman --runtime "$(command -v runc)" $flags | tee "$dir/run"
# shellcheck disable=SC2086
w=$(podman --runtime "$dir/ward-oci" run -d $limits "$image" /bin/sleep 1000)
# shellcheck disable=SC2086
r=$(podman --runtime "$(command -v runc)" run -d $limits "$image" /bin/sleep 1000)
trap 'podman rm -f "$w" "$r" >/dev/null 2>&1; rm -rf "$dir"' EXIT
"$dir/interleave" -w 3 "$N" podman exec "$w" /bin/true :: podman exec "$r" /bin/true | tee "$dir/exec"
python3 - "$dir/run" "$dir/exec" <<'PY'
import sys
for path, what in zip(sys.argv[1:], ["podman run --rm true", "podman exec true"]):
    ward, runc = [float(line.split()[0]) for line in open(path)]
    print(f"{what}: ward-oci / runc = {ward / runc:.3f}")
PY
