#!/bin/sh
# dockerd driving `ward oci` (a runtime named ward in daemon.json, pointed at a ward-oci link),
# one scenario a test, with a dockerd of its own (its data, exec root, containerd and socket in a
# scratch directory; no iptables, no bridge):
#   docker.sh SCENARIO WARD
# The image is made here from busybox (docker import). The engine's default rlimits are set
# within the hard limits (default-ulimits), as runc needs them on these machines too.
set -u
scenario=$1 ward=$2
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || { echo "engines: root only"; exit 77; }
tmp=$(mktemp -d /var/tmp/ward-docker.XXXXXX)
image=ward-engine-test:latest
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
D() { /usr/bin/docker -H "unix://$tmp/docker.sock" "$@"; }
dockerd_pid=""
cleanup() {
  D ps -aq 2>/dev/null | xargs -r /usr/bin/docker -H "unix://$tmp/docker.sock" rm -f >/dev/null 2>&1
  [ -n "$dockerd_pid" ] && kill "$dockerd_pid" 2>/dev/null && wait "$dockerd_pid" 2>/dev/null
  umount -R "$tmp/data" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$ward" "$tmp/ward-oci"
cat > "$tmp/daemon.json" <<JSON
{"runtimes": {"ward": {"path": "$tmp/ward-oci"},
              "ward-node": {"path": "$tmp/ward-oci", "runtimeArgs": ["--config", "$tmp/node.toml"]}},
 "default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1024, "Hard": 1024},
                     "nproc": {"Name": "nproc", "Soft": 1024, "Hard": 1024}},
 "iptables": false, "bridge": "none", "data-root": "$tmp/data", "exec-root": "$tmp/exec",
 "pidfile": "$tmp/docker.pid", "hosts": ["unix://$tmp/docker.sock"]}
JSON
dockerd --config-file "$tmp/daemon.json" > "$tmp/dockerd.log" 2>&1 &
dockerd_pid=$!
i=0
until D version >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 200 ] || { echo "FAIL: dockerd did not start: $(tail -5 "$tmp/dockerd.log")"; exit 1; }
  sleep 0.1
done

mkdir -p "$tmp/rootfs/bin"
cp /bin/busybox "$tmp/rootfs/bin/busybox"
for c in sh true cat echo sleep hostname tty; do ln -s busybox "$tmp/rootfs/bin/$c"; done
tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" . && D import "$tmp/rootfs.tar" "$image" >/dev/null ||
  { echo "FAIL: docker import"; exit 1; }

# The image again, with curl and what it loads and the CA bundle; $host: the registry's host.
with_curl() {
  copy_curl "$tmp/rootfs"
  tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" . && D import "$tmp/rootfs.tar" "$image" >/dev/null
  host=$(registry_host)
  [ -n "$host" ] || { echo "FAIL: no registry host from npm config"; exit 1; }
}

ward_inits() { pgrep -x ward-init | wc -l; }
inits_before=$(ward_inits)
R() { D run --runtime ward --network none "$@"; }

case $scenario in
run)
  out=$(R --rm "$image" sh -c 'echo hi; exit 3'); rc=$?
  # 125: the daemon refused to start it; its log says why.
  [ "$rc" = 125 ] && tail -20 "$tmp/dockerd.log"
  [ "$rc" = 3 ] || fail "exit status $rc, not 3"
  [ "$out" = hi ] || fail "output '$out', not hi"
  out=$(R --rm --hostname box "$image" hostname)
  [ "$out" = box ] || fail "hostname '$out', not box"
  out=$(printf 'data\n' | R -i --rm "$image" cat)
  [ "$out" = data ] || fail "stdin came back as '$out'"
  ;;
tty)
  # -t: the container's terminal is a pty whose master the engine got on its console socket.
  R -t --rm "$image" sh -c 'tty; echo hi; exit 5' > "$tmp/tty.out"; rc=$?
  [ "$rc" = 5 ] || fail "exit status $rc, not 5"
  out=$(tr -d '\r' < "$tmp/tty.out" | tr '\n' ' ')
  case $out in "/dev/pts/"*" hi ") ;; *) fail "terminal output '$out'" ;; esac
  # exec -t: the exec's own terminal, from the container's devpts, its master to the engine.
  id=$(R -d "$image" sleep 100) || fail "run -d"
  D exec -t "$id" sh -c 'tty; echo in; exit 6' > "$tmp/exec-tty.out"; rc=$?
  [ "$rc" = 6 ] || fail "exec -t exited $rc, not 6"
  out=$(tr -d '\r' < "$tmp/exec-tty.out" | tr '\n' ' ')
  case $out in "/dev/pts/"*" in ") ;; *) fail "exec terminal output '$out'" ;; esac
  D rm -f "$id" >/dev/null || fail "rm -f"
  ;;
exec)
  id=$(R -d "$image" sleep 100) || fail "run -d"
  out=$(D exec "$id" sh -c 'echo in; exit 4'); rc=$?
  [ "$rc" = 4 ] || fail "exec exited $rc, not 4"
  [ "$out" = in ] || fail "exec's output '$out', not in"
  out=$(printf 'data\n' | D exec -i "$id" cat)
  [ "$out" = data ] || fail "exec's stdin came back as '$out'"
  D exec "$id" /bin/nosuch >/dev/null 2>&1 && fail "a missing program ran"
  D exec -d "$id" sleep 100 || fail "exec -d"
  [ "$(D top "$id" | grep -c 'sleep 100')" = 2 ] || fail "top: $(D top "$id" 2>&1)"
  D rm -f "$id" >/dev/null || fail "docker rm -f"
  ;;
kill_stop_rm)
  id=$(R -d "$image" sleep 100) || fail "run -d"
  D kill "$id" >/dev/null || fail "docker kill"
  code=$(D wait "$id")
  [ "$code" = 137 ] || fail "killed container exited $code, not 137"
  D rm "$id" >/dev/null || fail "docker rm"
  id=$(R -d "$image" sleep 100) || fail "run -d"
  D stop -t 1 "$id" >/dev/null || fail "docker stop"
  [ "$(D inspect -f '{{.State.Status}}' "$id")" = exited ] || fail "stopped container is not exited"
  D rm "$id" >/dev/null
  id=$(R -d "$image" sleep 100) || fail "run -d"
  D rm -f "$id" >/dev/null || fail "docker rm -f"
  D ps -aq --no-trunc | grep -q "^$id" && fail "rm -f left the container"
  ;;
logs)
  id=$(R -d "$image" sh -c 'echo logged; echo err >&2') || fail "run -d"
  D wait "$id" >/dev/null
  [ "$(D logs "$id" 2>&1 | sort | tr '\n' ' ')" = "err logged " ] || fail "logs: $(D logs "$id" 2>&1)"
  D rm "$id" >/dev/null
  ;;
egress)
  # Docker 20.10 has no --annotation: the policy is the node's (a runtime in daemon.json whose
  # runtimeArgs name the node's config, whose profile allows the registry's host). The allowed
  # host answers over TLS through ward's proxy, another host is refused there, and the trail
  # says so.
  with_curl
  mkdir -m 0700 "$tmp/audit"
  printf 'extends = "default"\n[network]\nallow = ["%s"]\n' "$host" > "$tmp/node-profile.toml"
  printf '[oci]\nprofile = "%s"\naudit_dir = "%s"\n' "$tmp/node-profile.toml" "$tmp/audit" \
    > "$tmp/node.toml"
  out=$(D run --runtime ward-node --network none --rm "$image" sh -c \
    "curl -sS -o /dev/null -w '%{http_code}\n' https://$host/; \
     curl -sS -o /dev/null https://example.org/ 2>/dev/null || echo refused")
  [ "$out" = "200
refused" ] || fail "egress: '$out'"
  check_egress_trail "$tmp/audit"
  ;;
cgroup)
  # The container's cgroup is the one Docker names ("/docker/ID" with its cgroupfs driver): the
  # engine's limit is there and its statistics are the container's.
  id=$(R -d --pids-limit 50 "$image" sleep 100) || fail "run -d"
  init=$(D inspect -f '{{.State.Pid}}' "$id")
  path=$(sed -n 's/^[0-9]*:pids://p' "/proc/$init/cgroup")
  [ -n "$path" ] || path=$(sed -n 's/^0:://p' "/proc/$init/cgroup")
  case $path in */"$id"*) ;; *) fail "init's cgroup $path is not the container's" ;; esac
  max=$(pids_max_of "$path")
  [ "$(cat "$max")" = 50 ] || fail "pids.max at $path: $(cat "$max" 2>&1)"
  n=$(D stats --no-stream --format '{{.PIDs}}' "$id")
  [ "$n" -ge 2 ] 2>/dev/null || fail "stats counted '$n' processes"
  D rm -f "$id" >/dev/null || fail "docker rm -f"
  sleep 0.2
  [ -e "$max" ] && fail "the container's cgroup $path outlived it"
  ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac

sleep 0.2
[ "$(ward_inits)" -le "$inits_before" ] || fail "a ward-init was left running"
[ "$failures" = 0 ] && echo "docker $scenario: as expected"
[ "$failures" = 0 ]
