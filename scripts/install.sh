#!/bin/sh
# Installs ward (`make install`), removes it (`make uninstall`), or lays out the tree a package
# is made of (`make deb`).
#   install.sh install   WARD DESTDIR PREFIX
#   install.sh uninstall WARD DESTDIR PREFIX
# WARD is the built binary; it is installed stripped, with its debug information in a file of
# its own under PREFIX/lib/debug/.build-id/ (Debian's layout: gdb finds it by the binary's build
# id in /usr/lib/debug; for another PREFIX, `set debug-file-directory PREFIX/lib/debug`).
# Besides: a ward-oci link (behaves as `ward oci`: the runtime path container engines take),
# the manual pages (man/, rendered and compressed), the bash, zsh and fish completions,
# and the built-in profiles as readable copies under PREFIX/share/ward/profiles (the binary
# holds the ones it uses; tests/install/make_install_test.sh checks that they are the same).
set -eu
action=$1 ward=$2 destdir=$3 prefix=$4
src=$(cd "$(dirname "$0")/.." && pwd)
root=$destdir$prefix

# The files installed, one a line: DEST (relative to PREFIX) and what it is made from.
manifest() {
  id=$(build_id)
  echo "bin/ward binary"
  echo "bin/ward-oci link"
  echo "lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug debug"
  for page in "$src"/man/*.1; do echo "share/man/man1/$(basename "$page").gz man"; done
  echo "share/bash-completion/completions/ward completions/ward.bash"
  echo "share/zsh/site-functions/_ward completions/_ward"
  echo "share/fish/vendor_completions.d/ward.fish completions/ward.fish"
  for profile in "$src"/profiles/*.toml; do
    echo "share/ward/profiles/$(basename "$profile") profiles/$(basename "$profile")"
  done
}

build_id() {
  id=$(LC_ALL=C readelf -n "$ward" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
  [ -n "$id" ] || { echo "install.sh: $ward has no build id (link with --build-id)" >&2; exit 1; }
  echo "$id"
}

version() { "$ward" --version | sed -n '1s/^ward //p'; }

install_binary() {  # DEST DEBUG_DEST
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  objcopy --only-keep-debug --compress-debug-sections "$ward" "$tmp/ward.debug"
  strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    -o "$tmp/ward" "$ward"
  objcopy --add-gnu-debuglink="$tmp/ward.debug" "$tmp/ward"
  install -D -m 0755 "$tmp/ward" "$1"
  install -D -m 0644 "$tmp/ward.debug" "$2"
}

install_man() {  # PAGE DEST
  tmp_man=$(mktemp -d)
  python3 "$src/scripts/man_pages.py" render "$src/man" "$tmp_man" "$(version)"
  mkdir -p "$(dirname "$2")"
  gzip -9n < "$tmp_man/$1" > "$2"
  chmod 0644 "$2"
  rm -rf "$tmp_man"
}

do_install() {
  manifest | while read -r dest from; do
    case $from in
      binary) install_binary "$root/$dest" "$root/$(manifest | awk '$2 == "debug" {print $1}')" ;;
      debug) ;;
      link) ln -sfn ward "$root/$dest" ;;  # ward-oci: `ward oci`, for container engines
      man) install_man "$(basename "$dest" .gz)" "$root/$dest" ;;
      *) install -D -m 0644 "$src/$from" "$root/$dest" ;;
    esac
  done
  echo "ward $(version) installed in $root: $(du -h "$root/bin/ward" | cut -f1) binary (stripped)," \
       "debug information in $root/$(manifest | awk '$2 == "debug" {print $1}')"
}

do_uninstall() {
  # The build id that names the debug file is the installed binary's.
  [ -f "$root/bin/ward" ] && ward=$root/bin/ward
  files=$(manifest)
  debug_dir=$(dirname "$(echo "$files" | awk '$2 == "debug" {print $1}')")
  echo "$files" | while read -r dest from; do rm -f "$root/$dest"; done
  # The directories only ward uses go with it, if empty; shared ones (bin, man1, ...) stay.
  for dir in share/ward/profiles share/ward "$debug_dir"; do
    rmdir "$root/$dir" 2>/dev/null || true
  done
  echo "ward removed from $root"
}

case $action in
  install) do_install ;;
  uninstall) do_uninstall ;;
  manifest) manifest ;;
  *) echo "usage: install.sh install|uninstall|manifest WARD DESTDIR PREFIX" >&2; exit 125 ;;
esac
