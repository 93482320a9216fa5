#!/bin/sh
# Installs the Debian packages ward needs to build and test, when any is missing.
# Run as root on Debian 12; as another user it only reports what is missing.
# runsc (gVisor) is for one test only: tests/integration/outer_wall_test.cc runs ward inside it.
# `deps.sh kernels` adds what the kernel matrix (tests/kernels/) boots its kernels with.
set -eu
KERNEL_PKGS="qemu-system-x86 e2fsprogs zstd"
PKGS="build-essential cmake pkg-config git
libseccomp-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev
libasio-dev zlib1g-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
clang clang-format clang-tidy libclang-rt-14-dev
iproute2 curl ca-certificates python3 python3-paramiko hyperfine bubblewrap util-linux passwd procps
nodejs npm openssl busybox-static
runsc"
[ "${1:-}" = kernels ] && PKGS="$PKGS $KERNEL_PKGS"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm may come from outside Debian's packages on some machines: a working npm is enough.
case " $missing " in *" npm "*) command -v npm >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ npm//') ;; esac
case " $missing " in *" nodejs "*) command -v node >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ nodejs//') ;; esac
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ward: missing Debian packages:$missing (run 'make deps' as root)" >&2
  exit 1
fi
echo "ward: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
