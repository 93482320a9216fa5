#!/bin/sh
# `make deb`: a Debian package of a built ward, and its debug symbols as ward-dbgsym.
#   deb.sh WARD OUT_DIR
# The package's tree is what `make install` lays out with PREFIX=/usr (scripts/install.sh),
# plus the documentation Debian asks for; the debug file goes to ward-dbgsym, as Debian's own
# packages do. Depends comes from the binary's shared libraries (dpkg-shlibdeps, else the
# packages that own them); Recommends names what ward loads only for some features.
# WARD_MAINTAINER sets the Maintainer field.
set -eu
ward=$1 out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
maintainer=${WARD_MAINTAINER:-ward maintainers <ward@example.org>}
arch=$(dpkg --print-architecture)
version=$("$ward" --version | sed -n '1s/^ward //p')
commit=$("$ward" --version | sed -n 's/^commit: //p')
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
pkg=$work/ward dbg=$work/ward-dbgsym
mkdir -p "$out"

lay_out_tree() {
  sh "$src/scripts/install.sh" install "$ward" "$pkg" /usr >/dev/null
  mkdir -p "$dbg/usr/lib"
  mv "$pkg/usr/lib/debug" "$dbg/usr/lib/debug"
  rmdir "$pkg/usr/lib"
  doc=$pkg/usr/share/doc/ward
  mkdir -p "$doc"
  install -m 0644 "$src/README.md" "$doc/README.md"
  write_copyright > "$doc/copyright"
  write_changelog | gzip -9n > "$doc/changelog.gz"
  chmod 0644 "$doc/copyright" "$doc/changelog.gz"
  mkdir -p "$pkg/usr/share/lintian/overrides"
  write_lintian_overrides > "$pkg/usr/share/lintian/overrides/ward"
  chmod 0644 "$pkg/usr/share/lintian/overrides/ward"
  mkdir -p "$dbg/usr/share/doc"
  ln -s ward "$dbg/usr/share/doc/ward-dbgsym"
}

write_copyright() {
  cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ward
Comment: Built from commit $commit of the ward source tree.

Files: *
Copyright: 2026 the ward authors
License: see the ward source tree
EOF
}

write_lintian_overrides() {
  cat <<EOF
# zlib (like libseccomp and libstdc++) is linked statically on purpose: ward wraps every tool
# call, and the dynamic loader's work is part of each one's start-up (WARD_STATIC_DEPS in the
# top CMakeLists.txt).
ward: embedded-library zlib [usr/bin/ward]
EOF
}

write_changelog() {
  cat <<EOF
ward ($version) unstable; urgency=medium

  * Built from commit $commit.

 -- $maintainer  $(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")
EOF
}

# Depends: of the shared libraries ward links (libc, libm...), with the versions their symbols
# need. dpkg-shlibdeps wants a debian/control to read; a minimal one is enough.
depends() {
  if command -v dpkg-shlibdeps >/dev/null 2>&1; then
    mkdir -p "$work/shlibs/debian"
    printf 'Source: ward\n\nPackage: ward\nArchitecture: any\n' > "$work/shlibs/debian/control"
    (cd "$work/shlibs" && dpkg-shlibdeps -O "$pkg/usr/bin/ward" 2>/dev/null) |
      sed -n 's/^shlibs:Depends=//p'
    return
  fi
  # Without dpkg-dev: the packages that hold the libraries the binary needs, unversioned.
  LC_ALL=C readelf -d "$pkg/usr/bin/ward" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
    while read -r lib; do
      path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
      dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1
    done | sort -u | paste -sd, | sed 's/,/, /g'
}

control() {
  installed_size=$(du -sk --apparent-size "$pkg/usr" | cut -f1)
  cat <<EOF
Package: ward
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $1
Recommends: libssl3, ca-certificates
Section: admin
Priority: optional
Description: sandbox runtime for AI agents
 ward runs a command, such as an AI coding agent's shell command, package
 install or test suite, inside every boundary the Linux kernel offers,
 stacked: user, mount, pid, net, ipc, uts and cgroup namespaces, a root built
 from nothing, Landlock, seccomp and resource limits. Egress goes through a
 proxy that allows only the hosts the policy names; credentials reach only
 their hosts; every run leaves a tamper-evident audit trail.
 .
 libssl3 is loaded only for TLS interception by the credential broker and for
 approval webhooks; ca-certificates lets the broker verify upstream servers.
EOF
}

dbgsym_control() {
  installed_size=$(du -sk --apparent-size "$dbg/usr" | cut -f1)
  build_id=$(LC_ALL=C readelf -n "$pkg/usr/bin/ward" | sed -n 's/^ *Build ID: *//p')
  cat <<EOF
Package: ward-dbgsym
Source: ward
Version: $version
Auto-Built-Package: debug-symbols
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: ward (= $version)
Section: debug
Priority: optional
Description: debug symbols for ward
Build-Ids: $build_id
EOF
}

md5sums() {  # TREE
  (cd "$1" && find usr -type f -print0 | sort -z | xargs -0 md5sum)
}

lay_out_tree
mkdir -p "$pkg/DEBIAN" "$dbg/DEBIAN"
control "$(depends)" > "$pkg/DEBIAN/control"
dbgsym_control > "$dbg/DEBIAN/control"
md5sums "$pkg" > "$pkg/DEBIAN/md5sums"
md5sums "$dbg" > "$dbg/DEBIAN/md5sums"
deb=$out/ward_${version}_$arch.deb
dbgsym=$out/ward-dbgsym_${version}_$arch.deb
compress=${WARD_DEB_COMPRESSION:-xz}  # the tests take gzip: quicker, the same tree
dpkg-deb --root-owner-group -Z"$compress" --build "$pkg" "$deb" >/dev/null
dpkg-deb --root-owner-group -Z"$compress" --build "$dbg" "$dbgsym" >/dev/null
echo "$deb: $(du -h "$deb" | cut -f1), Depends: $(dpkg-deb -f "$deb" Depends)"
echo "$dbgsym: $(du -h "$dbgsym" | cut -f1)"
