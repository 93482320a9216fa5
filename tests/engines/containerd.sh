#!/bin/sh
# containerd's runc shim driving `ward oci` (ctr run --runc-binary, a ward-oci link), one scenario
# a test, with a containerd of its own (its root, state and socket in a scratch directory):
#   containerd.sh SCENARIO WARD
# The image is podman's busybox image, handed over as an OCI archive.
set -u
scenario=$1 ward=$2
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || { echo "engines: root only"; exit 77; }
tmp=$(mktemp -d /var/tmp/ward-containerd.XXXXXX)
ns=ward-test-$$
image=localhost/ward-engine-test:latest
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ctd_pid=""
cleanup() {
  for id in $(C task ls -q 2>/dev/null); do C task kill -s KILL "$id" >/dev/null 2>&1; done
  sleep 0.3
  for id in $(C container ls -q 2>/dev/null); do
    C task delete "$id" >/dev/null 2>&1
    C container delete "$id" >/dev/null 2>&1
  done
  [ -n "$ctd_pid" ] && kill "$ctd_pid" 2>/dev/null && wait "$ctd_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
C() { ctr -a "$tmp/sock" -n "$ns" "$@"; }
ln -s "$ward" "$tmp/ward-oci"

cat > "$tmp/config.toml" <<TOML
version = 2
root = "$tmp/root"
state = "$tmp/state"
[grpc]
  address = "$tmp/sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
TOML
containerd --config "$tmp/config.toml" > "$tmp/containerd.log" 2>&1 &
ctd_pid=$!
i=0
until C version >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 100 ] || { echo "FAIL: containerd did not start: $(tail -5 "$tmp/containerd.log")"; exit 1; }
  sleep 0.1
done

mkdir -p "$tmp/rootfs/bin"
cp /bin/busybox "$tmp/rootfs/bin/busybox"
for c in sh true cat echo sleep; do ln -s busybox "$tmp/rootfs/bin/$c"; done
tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" . && podman import -q "$tmp/rootfs.tar" "$image" >/dev/null &&
  podman save -q --format oci-archive -o "$tmp/image.tar" "$image" &&
  C image import "$tmp/image.tar" >/dev/null || { echo "FAIL: importing the image"; exit 1; }

ward_inits() { pgrep -x ward-init | wc -l; }
inits_before=$(ward_inits)
R() { C run --runc-binary "$tmp/ward-oci" "$@"; }

case $scenario in
run)
  out=$(R --rm "$image" r1 sh -c 'echo hi; exit 3' </dev/null); rc=$?
  [ "$rc" = 3 ] || fail "exit status $rc, not 3"
  [ "$out" = hi ] || fail "output '$out', not hi"
  R --rm "$image" r2 true </dev/null || fail "true failed"
  ;;
kill_ps)
  R -d "$image" k1 sleep 100 >/dev/null || fail "run -d"
  [ "$(ward_inits)" -gt "$inits_before" ] || fail "no ward-init runs the container"
  # init, the command and the exec server beside it
  [ "$(C task ps k1 | tail -n +2 | wc -l)" = 3 ] || fail "task ps: $(C task ps k1)"
  C task kill -s TERM k1 || fail "task kill"
  i=0
  until C task ls | grep -q 'k1 .*STOPPED'; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { fail "killed task did not stop: $(C task ls)"; break; }
    sleep 0.1
  done
  C task delete k1 >/dev/null || fail "task delete"
  C container delete k1 || fail "container delete"
  ;;
exec)
  R -d "$image" e1 sleep 100 >/dev/null || fail "run -d"
  out=$(C task exec --exec-id x1 e1 sh -c 'echo in; exit 4' </dev/null); rc=$?
  [ "$rc" = 4 ] || fail "exec exited $rc, not 4"
  [ "$out" = in ] || fail "exec's output '$out', not in"
  C task exec --exec-id x2 e1 /bin/nosuch </dev/null >/dev/null 2>&1 && fail "a missing program ran"
  C task kill -s KILL e1 || fail "task kill"
  i=0
  until C task ls | grep -q 'e1 .*STOPPED'; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { fail "killed task did not stop: $(C task ls)"; break; }
    sleep 0.1
  done
  C task delete e1 >/dev/null || fail "task delete"
  C container delete e1 || fail "container delete"
  ;;
egress)
  # By annotation (ctr run --annotation): the allowed registry host answers over TLS through
  # ward's proxy, another host is refused there, and the trail says so.
  copy_curl "$tmp/rootfs"
  curl_image=localhost/ward-engine-test-curl:latest
  tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" . &&
    podman import -q "$tmp/rootfs.tar" "$curl_image" >/dev/null &&
    podman save -q --format oci-archive -o "$tmp/curl.tar" "$curl_image" &&
    C image import "$tmp/curl.tar" >/dev/null || fail "importing the image with curl"
  host=$(registry_host)
  [ -n "$host" ] || fail "no registry host from npm config"
  mkdir -m 0700 "$tmp/audit"
  out=$(R --rm --annotation "run.ward/allow-net=$host" --annotation "run.ward/audit-dir=$tmp/audit" \
    "$curl_image" g1 sh -c "curl -sS -o /dev/null -w '%{http_code}\n' https://$host/; \
      curl -sS -o /dev/null https://example.org/ 2>/dev/null || echo refused" </dev/null)
  [ "$out" = "200
refused" ] || fail "egress: '$out'"
  check_egress_trail "$tmp/audit"
  ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac

sleep 0.2
[ "$(ward_inits)" -le "$inits_before" ] || fail "a ward-init was left running"
[ "$failures" = 0 ] && echo "containerd $scenario: as expected"
[ "$failures" = 0 ]
