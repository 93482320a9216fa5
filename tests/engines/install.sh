#!/bin/sh
# Installs podman (with runc, for the comparison), containerd and Docker (docker.io) from
# Debian's packages when missing.
# Engines run as root: as another user there is nothing to test here (77).
set -eu
[ "$(id -u)" = 0 ] || { echo "engines: root only"; exit 77; }
missing=""
for p in podman runc containerd docker.io; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "engines: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
podman --version
