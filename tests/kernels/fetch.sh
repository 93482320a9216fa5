#!/bin/sh
# Fetches one kernel of matrix.txt from Debian's archive into CACHE/ID: vmlinuz, the modules the
# test VM needs (decompressed, with their load order) and `release`. Uses the host's own Debian
# mirror with private apt lists, so the system's sources are not touched.
#   fetch.sh CACHE ID
set -eu
cache=$1 id=$2
here=$(cd "$(dirname "$0")" && pwd)
line=$(awk -v id="$id" '$1 == id' "$here/matrix.txt")
[ -n "$line" ] || { echo "fetch.sh: no kernel '$id' in $here/matrix.txt" >&2; exit 2; }
set -- $line
suite=$2 pkg=$3 version=$4
out="$cache/$id"
stamp="$pkg=$version $(cat "$here/modules.py" "$0" | cksum | cut -d' ' -f1)"
if [ -f "$out/ready" ] && [ "$(cat "$out/ready")" = "$stamp" ]; then exit 0; fi

mirror=${DEBIAN_MIRROR:-$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}';
                            grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
                              awk '{print $2}'; } | grep -E '/debian/?$' | head -1 || true)}
[ -n "$mirror" ] || { echo "fetch.sh: no Debian mirror in the apt sources; set DEBIAN_MIRROR" >&2; exit 1; }
apt_dir="$cache/apt-$suite"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
  > "$apt_dir/sources.list"
apt_get() {
  apt-get -o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=- \
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::archives=$apt_dir/archives" \
    -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root "$@"
}
apt_get update -qq
rm -rf "$out" && mkdir -p "$out/deb"
# The pinned version, or (when the archive has moved on) the newest build of the same package;
# the header line of the run says which one was used.
if ! (cd "$out/deb" && apt_get download -qq "$pkg=$version" 2>/dev/null); then
  echo "fetch.sh: $pkg=$version is no longer in $suite; taking its newest version" >&2
  (cd "$out/deb" && apt_get download -qq "$pkg")
fi
deb=$(ls "$out/deb"/*.deb)
dpkg-deb -x "$deb" "$out/root"
# Debian 13's packages ship their modules below /usr (merged /usr), older ones below /lib.
src_mods=$(ls -d "$out/root/usr/lib/modules" "$out/root/lib/modules" 2>/dev/null | head -1)
release=$(ls "$src_mods" | head -1)
cp "$out/root/boot/vmlinuz-$release" "$out/vmlinuz"
mods="$out/modules/lib/modules/$release"
mkdir -p "$mods"
# The modules the guest loads at boot, with what they depend on: the virtio devices, 9p and
# overlayfs for the root, ext4 for the disk that /tmp is on (as on Debian 12), and the socket
# diagnostics ward asks for (which a Debian system loads on demand, a guest without its module
# tree cannot).
python3 "$here/modules.py" "$src_mods/$release" "$mods" \
  virtio_pci virtio_blk virtio_net 9pnet_virtio 9p overlay crc32c_generic crc32c_intel ext4 \
  unix_diag inet_diag tcp_diag udp_diag nf_tables nft_chain_nat nft_redir nft_ct
cp "$src_mods/$release/modules.builtin" "$mods/" 2>/dev/null || true
echo "$release" > "$out/release"
echo "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)" > "$out/used"
rm -rf "$out/root" "$out/deb"
echo "$stamp" > "$out/ready"
