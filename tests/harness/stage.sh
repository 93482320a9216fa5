#!/bin/sh
# Test setup fixture: creates the unprivileged test user (when run as root) and stages ward
# and the probe where that user can reach them (a build tree under /root is not reachable).
set -eu
bin=$1 stage=$2 user=$3
if [ "$(id -u)" = 0 ] && ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" ||
    id -u "$user" >/dev/null  # a concurrent setup may have created it
fi
tmp="$stage.new.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$bin/ward" "$bin/ward-probe" "$tmp/"
chmod 755 "$tmp" "$tmp/ward" "$tmp/ward-probe"
# A setuid-root copy of the probe, for the tests that prove setuid has no effect inside.
if [ "$(id -u)" = 0 ]; then
  cp "$bin/ward-probe" "$tmp/ward-probe-setuid"
  chown root:root "$tmp/ward-probe-setuid"
  chmod 4755 "$tmp/ward-probe-setuid"
fi
rm -rf "$stage"
mv "$tmp" "$stage"
echo "staged $(ls "$stage" | tr '\n' ' ')in $stage for uid $(id -u "$user" 2>/dev/null || id -u)"
