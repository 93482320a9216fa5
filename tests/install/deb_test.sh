#!/bin/sh
# `make deb` (scripts/deb.sh, given this build's ward): the package declares its dependencies,
# installs into a scratch root with dpkg, its ward runs there, and removing it leaves nothing.
# Root only (dpkg --root wants to own what it unpacks); skipped (77) otherwise.
#   deb_test.sh WARD SOURCE_DIR
set -u
ward=$1 src=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: installing a package with dpkg --root needs root"; exit 77; }
command -v dpkg-deb >/dev/null 2>&1 || { echo "SKIP: no dpkg-deb (not a Debian system)"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

WARD_DEB_COMPRESSION=gzip sh "$src/scripts/deb.sh" "$ward" "$tmp/out" || { echo "FAIL: deb.sh"; exit 1; }
deb=$(ls "$tmp"/out/ward_*.deb) dbgsym=$(ls "$tmp"/out/ward-dbgsym_*.deb)
dpkg-deb -c "$deb" > "$tmp/contents"
dpkg-deb -c "$dbgsym" > "$tmp/dbgsym-contents"
depends=$(dpkg-deb -f "$deb" Depends)
echo "$depends" | grep -q '^libc6 (>= [0-9.]*)' || fail "Depends does not name libc6 with a version: '$depends'"
[ "$(dpkg-deb -f "$deb" Recommends)" = "libssl3, ca-certificates" ] || fail "Recommends: $(dpkg-deb -f "$deb" Recommends)"
grep -q ' \./usr/lib/debug' "$tmp/contents" && fail "the package holds debug information (it belongs in ward-dbgsym)"
grep -q '\./usr/lib/debug/\.build-id/../.*\.debug$' "$tmp/dbgsym-contents" || fail "ward-dbgsym holds no .build-id debug file"
awk '$2 != "root/root" {print}' "$tmp/contents" | grep . && fail "files not owned by root"

# A scratch root with an empty dpkg database. Its libc is the host's (the binary runs from
# outside it), so the dependency on libc6 is forced.
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
find "$root" | sort > "$tmp/before"
dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" "$dbgsym" > "$tmp/dpkg.log" 2>&1 ||
  { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
[ -x "$root/usr/bin/ward" ] || fail "no /usr/bin/ward in the scratch root"
[ -f "$root/usr/share/man/man1/ward-run.1.gz" ] || fail "no ward-run(1)"
[ -f "$root/usr/share/bash-completion/completions/ward" ] || fail "no bash completion"
[ -f "$root/usr/share/ward/profiles/default.toml" ] || fail "no default profile"
"$root/usr/bin/ward" --version > "$tmp/version" 2>&1 || fail "installed ward --version: $(cat "$tmp/version")"
# ward check: exit 0 (fully enforced here) or 1 (it says what is missing); anything else is a failure.
"$root/usr/bin/ward" check > "$tmp/check" 2>&1
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && grep -q "The default profile" "$tmp/check" ||
  fail "installed ward check exited $rc: $(cat "$tmp/check")"
echo "installed: $(head -1 "$tmp/version"), ward check: $(tail -1 "$tmp/check")"

dpkg --root="$root" --force-depends --force-script-chrootless -P ward-dbgsym ward >> "$tmp/dpkg.log" 2>&1 ||
  { cat "$tmp/dpkg.log"; fail "dpkg -P"; }
# Nothing left but dpkg's own database (whose status file dpkg rewrites).
find "$root" | grep -v "^$root/var/lib/dpkg/" | sort > "$tmp/after"
grep -v "^$root/var/lib/dpkg/" "$tmp/before" > "$tmp/before-files"
diff "$tmp/before-files" "$tmp/after" > "$tmp/left" || fail "left behind after dpkg -P: $(grep '^>' "$tmp/left")"
ls "$root/var/lib/dpkg/info" | grep -q '^ward' && fail "dpkg info files of ward left: $(ls "$root/var/lib/dpkg/info")"

if command -v lintian >/dev/null 2>&1; then
  lintian --no-tag-display-limit "$deb" > "$tmp/lintian" 2>&1
  grep '^E:' "$tmp/lintian" && fail "lintian errors (docs/install.md, make deb, says which tags are expected)"
  cat "$tmp/lintian"
fi
[ "$failures" = 0 ] && echo "make deb: the package installs into a scratch root, ward runs, and purging it leaves nothing"
exit $((failures > 0))
