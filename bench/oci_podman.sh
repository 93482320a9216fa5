#!/bin/sh
# `podman run --rm IMG true` with ward as the runtime (a ward-oci link) against runc, measured
# interleaved (bench/interleave.c): one run of each per iteration, the order reversed every
# other one. Both get the same flags: --network none, and rlimits within the hard limits (runc
# fails on podman's defaults where root lacks CAP_SYS_RESOURCE; ward clamps them).
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
cp /bin/busybox "$dir/rootfs/bin/" && ln -s busybox "$dir/rootfs/bin/true"
tar -C "$dir/rootfs" -cf "$dir/rootfs.tar" .
image=localhost/ward-bench:latest
podman import -q "$dir/rootfs.tar" "$image" >/dev/null
flags="run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 $image /bin/true"
# shellcheck disable=SC2086
"$dir/interleave" -w 3 "$N" podman --runtime "$dir/ward-oci" $flags :: \
  podman --runtime "$(command -v runc)" $flags | tee "$dir/out"
python3 - "$dir/out" <<'PY'
import sys
ward, runc = [float(line.split()[0]) for line in open(sys.argv[1])]
print(f"podman run --rm true: ward-oci / runc = {ward / runc:.3f}")
PY
