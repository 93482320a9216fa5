#!/bin/sh
# podman driving `ward oci` through a ward-oci link (--runtime), one scenario a test:
#   podman.sh SCENARIO WARD
# The image is made here from busybox (podman import), with curl and its libraries for egress.
# Containers run with --network none: the engine's network is not what is tested here.
set -u
scenario=$1 ward=$2
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || { echo "engines: root only"; exit 77; }
tmp=$(mktemp -d)
image=localhost/ward-engine-test:latest
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  podman ps -aq --filter label=ward-engine-test | xargs -r podman rm -f >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$ward" "$tmp/ward-oci"
P() { podman --runtime "$tmp/ward-oci" "$@"; }
R() { P run --label ward-engine-test --network none "$@"; }

make_image() {
  root=$tmp/rootfs
  mkdir -p "$root/bin" "$root/etc"
  cp /bin/busybox "$root/bin/busybox"
  for c in sh true cat echo ls sleep hostname ps tty mkdir; do ln -s busybox "$root/bin/$c"; done
  tar -C "$root" -cf "$tmp/rootfs.tar" . && podman import -q "$tmp/rootfs.tar" "$image" >/dev/null ||
    { echo "FAIL: podman import"; exit 1; }
}
make_image

# The image again, with curl and what it loads and the CA bundle; $host: the registry's host.
with_curl() {
  copy_curl "$tmp/rootfs"
  tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" . && podman import -q "$tmp/rootfs.tar" "$image" >/dev/null
  host=$(registry_host)
  [ -n "$host" ] || { echo "FAIL: no registry host from npm config"; exit 1; }
}

ward_inits() { pgrep -x ward-init | wc -l; }
inits_before=$(ward_inits)

case $scenario in
run)
  out=$(R --rm "$image" sh -c 'echo hi; exit 3'); rc=$?
  [ "$rc" = 3 ] || fail "exit status $rc, not 3"
  [ "$out" = hi ] || fail "output '$out', not hi"
  out=$(R --rm --hostname box "$image" hostname)
  [ "$out" = box ] || fail "hostname '$out', not box"
  R --rm "$image" true || fail "true failed"
  # The engine's rlimits apply where they are lower than ward's own.
  out=$(R --rm --ulimit nofile=512:1024 "$image" sh -c 'ulimit -n; ulimit -Hn' | tr '\n' ' ')
  [ "$out" = "512 1024 " ] || fail "nofile 512:1024 came out as '$out'"
  ;;
stdin)
  out=$(printf 'data\n' | R -i --rm "$image" cat)
  [ "$out" = data ] || fail "stdin came back as '$out'"
  ;;
kill_stop_rm)
  id=$(R -d "$image" sleep 100) || fail "run -d"
  podman ps -q --no-trunc | grep -q "^$id" || fail "a running container is not in podman ps"
  [ "$(ward_inits)" -gt "$inits_before" ] || fail "no ward-init runs the container"
  P kill "$id" >/dev/null || fail "podman kill"
  code=$(podman wait "$id")
  [ "$code" = 137 ] || fail "killed container exited $code, not 137"
  podman rm "$id" >/dev/null || fail "podman rm"
  id=$(R -d "$image" sleep 100) || fail "run -d"
  P stop -t 1 "$id" >/dev/null || fail "podman stop"
  [ "$(podman inspect -f '{{.State.Status}}' "$id")" = exited ] || fail "stopped container is not exited"
  podman rm "$id" >/dev/null
  id=$(R -d "$image" sleep 100) || fail "run -d"
  P rm -f "$id" >/dev/null || fail "podman rm -f"
  podman ps -aq --no-trunc | grep -q "^$id" && fail "rm -f left the container"
  ;;
tty)
  # -t: the container's terminal is a pty whose master the engine got on its console socket.
  R -t --rm "$image" sh -c 'tty; echo hi; exit 5' > "$tmp/tty.out"; rc=$?
  [ "$rc" = 5 ] || fail "exit status $rc, not 5"
  out=$(tr -d '\r' < "$tmp/tty.out" | tr '\n' ' ')
  case $out in "/dev/pts/"*" hi ") ;; *) fail "terminal output '$out'" ;; esac
  # exec -t: the exec's own terminal, from the container's devpts, its master to the engine.
  id=$(R -d "$image" sleep 100) || fail "run -d"
  P exec -t "$id" sh -c 'tty; echo in; exit 6' > "$tmp/exec-tty.out"; rc=$?
  [ "$rc" = 6 ] || fail "exec -t exited $rc, not 6"
  out=$(tr -d '\r' < "$tmp/exec-tty.out" | tr '\n' ' ')
  case $out in "/dev/pts/"*" in ") ;; *) fail "exec terminal output '$out'" ;; esac
  P rm -f "$id" >/dev/null || fail "rm -f"
  ;;
exec)
  id=$(R -d "$image" sleep 100) || fail "run -d"
  out=$(P exec "$id" sh -c 'echo in; exit 4'); rc=$?
  [ "$rc" = 4 ] || fail "exec exited $rc, not 4"
  [ "$out" = in ] || fail "exec's output '$out', not in"
  out=$(printf 'data\n' | P exec -i "$id" cat)
  [ "$out" = data ] || fail "exec's stdin came back as '$out'"
  P exec "$id" /bin/nosuch >/dev/null 2>&1; rc=$?
  [ "$rc" = 127 ] || fail "a missing program exited $rc, not 127"
  P exec -d "$id" sleep 100 >/dev/null || fail "exec -d"
  [ "$(P top "$id" pid args | grep -c 'sleep 100')" = 2 ] || fail "top: $(P top "$id" pid args 2>&1)"
  P rm -f "$id" >/dev/null || fail "podman rm -f"
  ;;
logs)
  id=$(R -d "$image" sh -c 'echo logged; echo err >&2') || fail "run -d"
  podman wait "$id" >/dev/null
  [ "$(podman logs "$id" 2>&1 | sort | tr '\n' ' ')" = "err logged " ] || fail "logs: $(podman logs "$id" 2>&1)"
  podman rm "$id" >/dev/null
  ;;
binds)
  mkdir -p "$tmp/given"
  echo given > "$tmp/given/file"
  echo secret > "$tmp/secret"
  out=$(R --rm -v "$tmp/given:/given:ro" "$image" sh -c \
    "cat /given/file; (echo x > /given/new) 2>/dev/null && echo wrote || echo read-only; cat $tmp/secret 2>/dev/null || echo unseen")
  [ "$out" = "given
read-only
unseen" ] || fail "binds: '$out'"
  [ -e "$tmp/given/new" ] && fail "a read-only bind was written"
  ;;
egress)
  # The allowed registry host answers over TLS through ward's proxy, another host is refused
  # there, and the trail says so.
  with_curl
  mkdir -m 0700 "$tmp/audit"
  out=$(R --rm --annotation "run.ward/allow-net=$host" --annotation "run.ward/audit-dir=$tmp/audit" \
    "$image" sh -c "curl -sS -o /dev/null -w '%{http_code}\n' https://$host/; \
                    curl -sS -o /dev/null https://example.org/ 2>/dev/null || echo refused")
  [ "$out" = "200
refused" ] || fail "egress: '$out'"
  check_egress_trail "$tmp/audit"
  ;;
pod_network)
  # The engine's own network (its bridge here, a pod's on Kubernetes), given to ward by path:
  # the container's supervisor is in it and connects from it, the container is not.
  with_curl
  id=$(P run -d --label ward-engine-test --annotation "run.ward/allow-net=$host" "$image" \
    sleep 100) || fail "run -d on the engine's network"
  sandbox=$(podman inspect --format '{{.NetworkSettings.SandboxKey}}' "$id")
  [ -n "$sandbox" ] || fail "podman gave the container no network namespace"
  want="net:[$(stat -L -c %i "$sandbox")]"
  init=$(podman inspect --format '{{.State.Pid}}' "$id")
  supervisor=$(pgrep -f "create.* $id\$" | head -n1)
  [ -n "$supervisor" ] || fail "no supervisor for $id"
  [ "$(readlink "/proc/$supervisor/ns/net")" = "$want" ] ||
    fail "the supervisor is in $(readlink "/proc/$supervisor/ns/net"), not the engine's $want"
  [ "$(readlink "/proc/$init/ns/net")" != "$want" ] || fail "the container is in the engine's network"
  out=$(P exec "$id" curl -sS -o /dev/null -w '%{http_code}' "https://$host/")
  [ "$out" = 200 ] || fail "egress from the engine's network: '$out'"
  P rm -f "$id" >/dev/null || fail "podman rm -f"
  ;;
expose)
  # On the engine's own network a port the container exposes answers at the container's address
  # and through the engine's published port; one it does not expose is not reached.
  id=$(P run -d --label ward-engine-test --annotation run.ward/expose=8080 \
    -p 127.0.0.1:18080:8080 "$image" sh -c \
    'mkdir /tmp/w && echo inside > /tmp/w/index.html && busybox httpd -p 127.0.0.1:8080 -h /tmp/w &&
     exec sleep 100') || fail "run -d with run.ward/expose"
  ip=$(podman inspect -f '{{.NetworkSettings.IPAddress}}' "$id")
  out=""
  for _ in $(seq 100); do
    out=$(curl -s --max-time 2 "http://$ip:8080/") && [ "$out" = inside ] && break
    sleep 0.1
  done
  [ "$out" = inside ] || fail "the exposed port at $ip: '$out'"
  out=$(curl -s --max-time 2 http://127.0.0.1:18080/)
  [ "$out" = inside ] || fail "the published port: '$out'"
  curl -s --max-time 2 "http://$ip:8081/" >/dev/null && fail "a port not exposed answered"
  P rm -f "$id" >/dev/null || fail "podman rm -f"
  ;;
credential)
  # A credential with the engine in front: the node's config (credentials_dir, upstream_ca)
  # reaches ward oci through a wrapper the engine runs as its runtime, the profile and the
  # credential come by annotation. The origin (openssl s_server on podman's bridge, a
  # certificate of a test CA for api.test) gets the real key; the container holds the phantom.
  # (podman splits an annotation at commas unless it is quoted as CSV.)
  with_curl
  gw=$(podman network inspect podman -f '{{range .Subnets}}{{.Gateway}}{{end}}')
  [ -n "$gw" ] || fail "podman's network has no gateway"
  secret=sk-engine-test-0123456789abcdef0123456789abcdef
  mkdir -m 0700 "$tmp/creds" && printf %s "$secret" > "$tmp/creds/testapi"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=ward-engine-test-ca \
    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null &&
  openssl req -newkey rsa:2048 -nodes -subj /CN=api.test -keyout "$tmp/origin.key" \
    -out "$tmp/origin.csr" 2>/dev/null &&
  printf 'subjectAltName=DNS:api.test\n' > "$tmp/san" &&
  openssl x509 -req -in "$tmp/origin.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
    -CAcreateserial -days 1 -extfile "$tmp/san" -out "$tmp/origin.pem" 2>/dev/null ||
    fail "making the test CA"
  port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
  # Its stdin is a FIFO held open here (at its end s_server would stop).
  mkfifo "$tmp/origin.in"
  openssl s_server -quiet -accept "$gw:$port" -cert "$tmp/origin.pem" -key "$tmp/origin.key" \
    < "$tmp/origin.in" > "$tmp/origin.out" 2>&1 &
  origin=$!
  exec 9> "$tmp/origin.in"
  for _ in $(seq 50); do
    ss -Hltn "sport = :$port" | grep -q . && break
    sleep 0.1
  done
  cat > "$tmp/node.toml" <<TOML
[oci]
credentials_dir = "$tmp/creds"
upstream_ca = ["$tmp/ca.pem"]
TOML
  cat > "$tmp/creds.toml" <<TOML
extends = "default"
[credentials.testapi]
from = "env:UNUSED"
hosts = ["api.test:$port"]
env = "TEST_API_KEY"
route = "testapi"
route_env = { TEST_API_BASE_URL = "{route_url}" }
TOML
  printf '#!/bin/sh\nexec "%s" oci --config "%s" "$@"\n' "$ward" "$tmp/node.toml" > "$tmp/ward-oci-node"
  chmod 0755 "$tmp/ward-oci-node"
  out=$(podman --runtime "$tmp/ward-oci-node" run --rm --label ward-engine-test \
    --add-host "api.test:$gw" --annotation "run.ward/profile=$tmp/creds.toml" \
    --annotation run.ward/credentials=testapi \
    --annotation "\"run.ward/allow-net=api.test:$port,$gw:$port\"" "$image" sh -c \
    'curl -sS --max-time 3 -H "Authorization: Bearer $TEST_API_KEY" "$TEST_API_BASE_URL/v1/route" \
       >/dev/null 2>&1; echo "phantom=$TEST_API_KEY"' 2>&1)
  kill "$origin" 2>/dev/null
  wait "$origin" 2>/dev/null
  exec 9>&-
  grep -q "Bearer $secret" "$tmp/origin.out" || fail "the origin did not get the key: $(cat "$tmp/origin.out")"
  grep -q "GET /v1/route" "$tmp/origin.out" || fail "the origin got no request"
  phantom=${out#phantom=}
  [ "${#phantom}" = "${#secret}" ] || fail "no phantom of the key's length in the container: '$out'"
  [ "$phantom" != "$secret" ] || fail "the container holds the key"
  case $out in *"$secret"*) fail "the key reached the container: $out" ;; esac
  ;;
seccomp)
  # The engine's default profile is on in every other scenario; a profile of the test's own
  # refuses mkdir, and ward's own filter still refuses mount that the profile allows.
  cat > "$tmp/profile.json" <<'JSON'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
              {"names": ["mount"], "action": "SCMP_ACT_ALLOW"}]}
JSON
  out=$(R --rm --security-opt "seccomp=$tmp/profile.json" "$image" sh -c \
    'mkdir /tmp/d 2>/dev/null || echo mkdir refused; busybox mount -t tmpfs none /tmp 2>/dev/null || echo mount refused')
  [ "$out" = "mkdir refused
mount refused" ] || fail "seccomp: '$out'"
  out=$(R --rm "$image" sh -c 'mkdir /tmp/d && echo made')
  [ "$out" = made ] || fail "without the profile: '$out'"
  ;;
cgroup)
  # The container's cgroup is the one podman names (linux.cgroupsPath): the engine's limit is
  # there, its statistics are the container's, and the cgroup goes with the container.
  id=$(R -d --pids-limit 50 "$image" sleep 100) || fail "run -d"
  path=$(podman inspect -f '{{.State.CgroupPath}}' "$id")
  init=$(podman inspect -f '{{.State.Pid}}' "$id")
  for c in memory pids cpu; do
    grep -q ":$c:$path\$" "/proc/$init/cgroup" || grep -q "^0::$path\$" "/proc/$init/cgroup" ||
      fail "init is not in $path ($c): $(cat "/proc/$init/cgroup")"
  done
  max=$(pids_max_of "$path")
  [ "$(cat "$max")" = 50 ] || fail "pids.max at $path: $(cat "$max" 2>&1)"
  n=$(podman stats --no-stream --format '{{.PIDs}}' "$id")
  [ "$n" -ge 2 ] 2>/dev/null || fail "stats counted '$n' processes"
  P rm -f "$id" >/dev/null || fail "podman rm -f"
  sleep 0.2
  [ -e "$max" ] && fail "the container's cgroup $path outlived it"
  ;;
refused)
  out=$(R --rm --annotation run.ward/bogus=1 "$image" true 2>&1) && fail "an unknown run.ward/ annotation was accepted"
  echo "$out" | grep -q "run.ward/bogus" || fail "the refusal does not name the annotation: $out"
  ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac

# Nothing of ward is left running.
sleep 0.2
[ "$(ward_inits)" -le "$inits_before" ] || fail "a ward-init was left running"
[ "$failures" = 0 ] && echo "podman $scenario: as expected"
[ "$failures" = 0 ]
