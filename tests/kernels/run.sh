#!/bin/sh
# Boots one kernel of matrix.txt in qemu-system-x86_64 (KVM when /dev/kvm is usable, TCG
# otherwise) on the host's own root, shared read-only, and runs the ctest tests whose names match
# TESTS inside it, once as root and once as the test user, as guest.sh describes. TESTS is a
# ctest -R regex in which @ stands for the identity ("root", "user"); by default
# $WARD_KERNEL_TESTS, else the entry's own column of matrix.txt, else every integration and
# escape test. The guest's console streams to
# stdout; the exit status is 0 when both passes passed (77 when the VM cannot be made here).
#   run.sh ID BUILD_DIR [TESTS]
# WARD_KERNEL_EXCLUDE: tests left out (ctest -E, @ for the identity). WARD_KERNEL_SCRIPT=FILE
# runs that shell script inside (as root) instead of the tests.
set -eu
id=$1 build=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
entry_tests=$(awk -v id="$id" '$1 == id {print $5}' "$here/matrix.txt")
[ "$entry_tests" != - ] || entry_tests=
tests=${3:-${WARD_KERNEL_TESTS:-${entry_tests:-^(escape|integration)\.@\.}}}
cache=${WARD_KERNEL_CACHE:-$build/kernels}
mem=${WARD_VM_MEMORY:-4096}
cpus=${WARD_VM_CPUS:-$(nproc)}
vm_timeout=${WARD_VM_TIMEOUT:-5400}

for tool in qemu-system-x86_64 busybox; do
  command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool is not installed (make deps installs it)"; exit 77; }
done
sh "$here/fetch.sh" "$cache" "$id"
release=$(cat "$cache/$id/release")

# The initramfs: busybox, /init and the modules that reach the host's root.
initrd="$cache/$id/initramfs.cpio.gz"
if [ ! -f "$initrd" ] || [ "$here/initramfs-init.sh" -nt "$initrd" ] || [ "$cache/$id/ready" -nt "$initrd" ]; then
  stage=$(mktemp -d "$cache/initramfs.XXXXXX")
  mkdir -p "$stage/bin" "$stage/lib"
  cp "$(command -v busybox)" "$stage/bin/busybox"
  cp "$here/initramfs-init.sh" "$stage/init"
  chmod 755 "$stage/init"
  cp -r "$cache/$id/modules/lib/modules" "$stage/lib/"
  (cd "$stage" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$initrd.new"
  mv "$initrd.new" "$initrd"
  rm -rf "$stage"
fi

job=$(mktemp -d "$cache/job-$id.XXXXXX")
trap 'rm -rf "$job"' EXIT
cp "$here/guest.sh" "$here/summarize.py" "$job/"
cp "$cache/$id/used" "$job/kernel.used"
[ -z "${WARD_KERNEL_SCRIPT:-}" ] || cp "$WARD_KERNEL_SCRIPT" "$job/script.sh"
cat > "$job/job.env" <<ENV
WARD_BUILD='$build'
WARD_TESTS='$tests'
WARD_SOURCE='$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")'
WARD_EXCLUDE='${WARD_KERNEL_EXCLUDE:-}'
WARD_KERNEL_ID='$id'
WARD_JOBS='$cpus'
ENV
# The host's own trust settings, for the tests that reach the package registry (npm and curl
# read them from the environment; the files are on the shared root).
for v in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE; do
  eval "val=\${$v:-}"
  [ -z "$val" ] || echo "export $v='$val'" >> "$job/job.env"
done
chmod 755 "$job"
# The guest's disk for /tmp and /var/tmp (sparse: it costs what the tests write).
truncate -s 16G "$job/disk.img"
mkfs.ext4 -q -F -E nodiscard "$job/disk.img"

# KVM only where a guest starts with it: a /dev/kvm whose vCPU setup fails (seen in a nested VM:
# "failed to set MSR") falls back to TCG. A paused guest still running when the probe's timeout
# ends (124) started.
kvm_starts() {
  [ -w /dev/kvm ] || return 1
  timeout 5 qemu-system-x86_64 -accel kvm -cpu host -m 64 -nodefaults -display none -monitor none \
    -serial none -S < /dev/null > /dev/null 2>&1
  [ $? = 124 ]
}
if kvm_starts; then accel="-accel kvm -cpu host"; else accel="-accel tcg,thread=multi -cpu max"; fi
echo "run.sh: booting $id ($release) with ${accel%% -cpu*}, $cpus CPUs, $mem MiB" >&2
start=$(date +%s)
# The console from the guest's header line on (the firmware's and the kernel's chatter before it
# stays in console.log, printed whole when the guest never got that far).
# shellcheck disable=SC2086
timeout "$vm_timeout" qemu-system-x86_64 $accel -m "$mem" -smp "$cpus" \
  -nodefaults -nographic -monitor none -serial stdio -no-reboot \
  -kernel "$cache/$id/vmlinuz" -initrd "$initrd" \
  -append "console=ttyS0 panic=-1 quiet loglevel=3 cgroup_no_v1=all" \
  -drive file="$job/disk.img",if=virtio,format=raw,cache=unsafe \
  -nic user,model=virtio-net-pci \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs local,path="$job",mount_tag=job,security_model=none,multidevs=remap \
  < /dev/null 2>&1 | sed -u 's/\r//g' | tee "$job/console.log" | sed -u -n -e 's/^.*\(== .* ==\)$/\1/' -e '/^== .* ==$/,$p' || true
grep -q '== .* ==' "$job/console.log" || cat "$job/console.log"
echo "run.sh: $id took $(( $(date +%s) - start )) s with ${accel%% -cpu*}"
# The whole logs and JUnit files stay for a look after the run.
rm -rf "$cache/$id/last" && mkdir -p "$cache/$id/last"
cp "$job"/*.log "$job"/*.xml "$job"/*.json "$job"/summary.txt "$cache/$id/last/" 2>/dev/null || true
echo "run.sh: the whole logs are in $cache/$id/last"
[ -f "$job/rc" ] || { echo "run.sh: the guest left no result"; exit 1; }
exit "$(cat "$job/rc")"
