#!/bin/bash
# Runs as pid 1 of the test VM, on the host's root under a tmpfs overlay: sets the machine up as
# a systemd host would (cgroup v2 unified hierarchy, a subtree delegated to the test user),
# prints the header line and `ward check --json`, runs the tests job.env names, leaves the
# results in /job and powers off.
set -u
export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /job/job.env  # WARD_SOURCE, WARD_BUILD, WARD_TESTS (ctest -R, @ for the identity), WARD_KERNEL_ID, WARD_JOBS

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o ptmxmode=0666,mode=0620,gid=5 devpts /dev/pts
# The source and build trees stay reachable at their paths when they lie below a directory the
# guest replaces next (a clone in /tmp): bound aside first, back in place after.
kept=()
for tree in "$WARD_SOURCE" "$WARD_BUILD"; do
  case "$tree" in
    /tmp/* | /var/tmp/* | /run/* | /dev/shm/*)
      case "$tree/" in "${kept[0]:-//}/"*) continue ;; esac  # the build inside the source
      mkdir -p "/.ward-kept${#kept[@]}"
      mount --bind "$tree" "/.ward-kept${#kept[@]}"
      kept+=("$tree")
      ;;
  esac
done
# /tmp and /var/tmp on the ext4 disk run.sh made, as on a Debian 12 install; /run as systemd
# lays it out.
mkdir -p /disk
mount -t ext4 /dev/vda /disk
mkdir -p /disk/tmp /disk/var-tmp
chmod 1777 /disk/tmp /disk/var-tmp
mount --bind /disk/tmp /tmp
mount --bind /disk/var-tmp /var/tmp
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/lock /run/user
chmod 1777 /run/lock
for i in "${!kept[@]}"; do
  mkdir -p "${kept[$i]}"
  mount --bind "/.ward-kept$i" "${kept[$i]}"
done
hostname ward-kernel-vm
ip link set lo up
# QEMU's user-mode network: the package registries the tests reach (npm) and nothing else of ours.
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "nameserver 10.0.2.3" > /etc/resolv.conf
ulimit -n 65536 2>/dev/null || ulimit -n 4096

user=ward-test
id -u "$user" >/dev/null 2>&1 ||
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
uid=$(id -u "$user")

# cgroup v2 as systemd lays it out: controllers enabled from the root down, this script in a
# root session scope, and user@UID.service delegated to the test user (the directory and its
# cgroup.procs, cgroup.threads and cgroup.subtree_control are the user's).
cg=/sys/fs/cgroup
mount -t cgroup2 -o nsdelegate cgroup2 "$cg"
mkdir -p "$cg/init.scope"
echo $$ > "$cg/init.scope/cgroup.procs"
ctrls=$(sed 's/\([a-z_]*\)/+\1/g' "$cg/cgroup.controllers")
echo "$ctrls" | tr ' ' '\n' | grep -E '^\+(cpu|memory|pids|io)$' | while read -r c; do
  echo "$c" > "$cg/cgroup.subtree_control"
done
svc="$cg/user.slice/user-$uid.slice/user@$uid.service"
mkdir -p "$svc" "$cg/user.slice/user-0.slice/session-1.scope"
for d in "$cg/user.slice" "$cg/user.slice/user-$uid.slice"; do
  for c in cpu memory pids io; do echo "+$c" > "$d/cgroup.subtree_control" 2>/dev/null; done
done
chown "$user" "$svc" "$svc/cgroup.procs" "$svc/cgroup.threads" "$svc/cgroup.subtree_control"
echo $$ > "$cg/user.slice/user-0.slice/session-1.scope/cgroup.procs"

ward="$WARD_BUILD/bin/ward"
abi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None); r=l.syscall(444, None, 0, 1); print(max(r, 0))')
echo "== $(uname -r) landlock $abi cgroup v2 =="
echo "kernel package: $(cat /job/kernel.used 2>/dev/null)"
echo "--- ward check --json"
"$ward" check --json | tee /job/check.json

# One ctest pass per identity, each from where that identity's shell would live.
run_pass() {  # as cgroup-dir [VAR=value ...]
  local as=$1 dir=$2
  shift 2
  echo $$ > "$dir/cgroup.procs"
  echo "--- $as tests from ${dir#$cg} ($*)"
  local start=$(date +%s)
  (cd "$WARD_BUILD" && env "$@" ctest -R "${WARD_TESTS//@/$as}" ${WARD_EXCLUDE:+-E "${WARD_EXCLUDE//@/$as}"} \
     -j "${WARD_JOBS:-2}" --output-on-failure --timeout 900 \
     --output-junit "/job/junit-$as.xml" > "/job/ctest-$as.log" 2>&1)
  echo $? > "/job/rc-$as"
  tail -n 40 "/job/ctest-$as.log"
  echo "--- $as tests took $(( $(date +%s) - start )) s"
}
# A shell script of one's own instead of the passes (run.sh's WARD_KERNEL_SCRIPT), as root from
# the session scope: for looking into a kernel by hand.
if [ -f /job/script.sh ]; then
  echo $$ > "$cg/user.slice/user-0.slice/session-1.scope/cgroup.procs"
  bash /job/script.sh
  echo $? > /job/rc
  sync
  echo o > /proc/sysrq-trigger
fi
# root: a login session's scope, which other processes share.
run_pass root "$cg/user.slice/user-0.slice/session-1.scope" WARD_TEST_STRICT=1
# The user: a scope inside the delegated user@UID.service, and an empty delegated cgroup for
# ward's runs next to it (what `systemd-run --user --scope -p Delegate=yes` gives).
for c in cpu memory pids io; do echo "+$c" > "$svc/cgroup.subtree_control" 2>/dev/null; done
mkdir -p "$svc/app.slice/ward-tests.scope" "$svc/ward.slice"
for d in "$svc/app.slice" "$svc/app.slice/ward-tests.scope" "$svc/ward.slice"; do
  chown "$user" "$d" "$d/cgroup.procs" "$d/cgroup.threads" "$d/cgroup.subtree_control"
done
run_pass user "$svc/app.slice/ward-tests.scope" WARD_TEST_STRICT=1 \
  "WARD_CGROUP_ROOT=${svc#$cg}/ward.slice"
python3 /job/summarize.py /job/junit-root.xml /job/junit-user.xml | tee /job/summary.txt
rc=0
for as in root user; do [ "$(cat /job/rc-$as)" = 0 ] || rc=1; done
echo $rc > /job/rc
sync
echo o > /proc/sysrq-trigger
sleep 30
