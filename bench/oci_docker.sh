#!/bin/sh
# Docker with ward as a runtime (a ward-oci link, `runtimes` in daemon.json) against runc, with a
# dockerd of its own, measured interleaved (bench/interleave.c: one run of each per iteration,
# the order reversed every other one):
#  - exec latency, `docker exec ID true` in a running container of each runtime;
#  - start-up, `docker run --rm IMG true`.
# Both get the same flags: --network none, and default-ulimits within the hard limits.
#   bench/oci_docker.sh WARD [N]          (as root; docker.io and runc installed)
set -eu
WARD=${1:?usage: bench/oci_docker.sh WARD [N]}
N=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /var/tmp/ward-bench.XXXXXX)
dockerd_pid=""
cleanup() {
  [ -n "$dockerd_pid" ] && kill "$dockerd_pid" 2>/dev/null && wait "$dockerd_pid" 2>/dev/null
  umount -R "$dir/data" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cc -O2 -o "$dir/interleave" "$here/interleave.c"
cp "$WARD" "$dir/ward" && ln -s ward "$dir/ward-oci"
cat > "$dir/daemon.json" <<JSON
{"runtimes": {"ward": {"path": "$dir/ward-oci"}},
 "default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1024, "Hard": 1024},
                     "nproc": {"Name": "nproc", "Soft": 1024, "Hard": 1024}},
 "iptables": false, "bridge": "none", "data-root": "$dir/data", "exec-root": "$dir/exec",
 "pidfile": "$dir/docker.pid", "hosts": ["unix://$dir/docker.sock"]}
JSON
dockerd --config-file "$dir/daemon.json" > "$dir/dockerd.log" 2>&1 &
dockerd_pid=$!
docker="/usr/bin/docker -H unix://$dir/docker.sock"
i=0
until $docker version >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -lt 200 ] || { echo "dockerd did not start"; exit 1; }; sleep 0.1
done
mkdir -p "$dir/rootfs/bin"
cp /bin/busybox "$dir/rootfs/bin/"
for applet in true sleep; do ln -s busybox "$dir/rootfs/bin/$applet"; done
tar -C "$dir/rootfs" -cf "$dir/rootfs.tar" .
$docker import "$dir/rootfs.tar" ward-bench:latest >/dev/null
w=$($docker run -d --runtime ward --network none ward-bench:latest /bin/sleep 1000)
r=$($docker run -d --runtime runc --network none ward-bench:latest /bin/sleep 1000)
# shellcheck disable=SC2086
"$dir/interleave" -w 3 "$N" $docker exec "$w" /bin/true :: $docker exec "$r" /bin/true | tee "$dir/exec.times"
# shellcheck disable=SC2086
"$dir/interleave" -w 3 "$N" $docker run --rm --runtime ward --network none ward-bench:latest /bin/true :: \
  $docker run --rm --runtime runc --network none ward-bench:latest /bin/true | tee "$dir/run.times"
$docker rm -f "$w" "$r" >/dev/null
python3 - "$dir/exec.times" "$dir/run.times" <<'PY'
import sys
for path, what in zip(sys.argv[1:], ["docker exec true", "docker run --rm true"]):
    lines = open(path).read().split("\n")
    ward, runc = [float(line.split()[0]) for line in lines if line.strip()]
    print(f"{what}: ward-oci / runc = {ward / runc:.3f}")
PY
