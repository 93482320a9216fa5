#!/bin/sh
# What `make install` lays out (scripts/install.sh, given this build's ward, into a scratch
# DESTDIR), what it is worth there, and that `make uninstall` takes all of it away again.
#   make_install_test.sh WARD SOURCE_DIR
set -u
ward=$1 src=$2
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest prefix=/usr/local
root=$dest$prefix
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

sh "$src/scripts/install.sh" install "$ward" "$dest" "$prefix" || { echo "FAIL: install.sh"; exit 1; }

# Every file of the manifest, nothing else.
sh "$src/scripts/install.sh" manifest "$ward" "$dest" "$prefix" | awk '$2 != "link" {print $1}' | sort > "$tmp/expected"
(cd "$root" && find . -type f | sed 's|^\./||' | sort) > "$tmp/installed"
diff "$tmp/expected" "$tmp/installed" > "$tmp/diff" || fail "installed files differ from the manifest: $(cat "$tmp/diff")"
for dir in share/man/man1 share/bash-completion/completions share/zsh/site-functions \
           share/fish/vendor_completions.d share/ward/profiles; do
  [ -d "$root/$dir" ] || fail "no $prefix/$dir"
done

# The binary: stripped, runs, and points at its debug information.
bin=$root/bin/ward
sections=$(LC_ALL=C readelf -S -W "$bin")
echo "$sections" | grep -q ' \.symtab ' && fail "$prefix/bin/ward still has a symbol table"
echo "$sections" | grep -q ' \.debug_info ' && fail "$prefix/bin/ward still has debug information"
echo "$sections" | grep -q ' \.gnu_debuglink ' || fail "$prefix/bin/ward has no .gnu_debuglink"
id=$(LC_ALL=C readelf -n "$bin" | sed -n 's/^ *Build ID: *//p')
debug=$root/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
[ -n "$id" ] && [ -f "$debug" ] || fail "no debug file for build id '$id' under $prefix/lib/debug/.build-id"
LC_ALL=C readelf -S -W "$debug" 2>/dev/null | grep -q ' \.debug_info ' || fail "$debug holds no .debug_info"
[ "$(LC_ALL=C readelf -n "$debug" 2>/dev/null | sed -n 's/^ *Build ID: *//p')" = "$id" ] || fail "the debug file's build id is not the binary's"
"$bin" --version > "$tmp/version" || fail "installed ward --version failed"
# ward-oci: a link to ward that is `ward oci` (the path container engines are given).
[ "$(readlink "$root/bin/ward-oci")" = ward ] || fail "$prefix/bin/ward-oci is not a link to ward"
"$root/bin/ward-oci" features | grep -q '"ociVersionMax"' || fail "$prefix/bin/ward-oci features is not ward oci features"
[ "$("$bin" --version)" = "$("$ward" --version)" ] || fail "installed ward --version differs from the built one"
echo "installed ward: $(stat -c %s "$bin") bytes stripped (built: $(stat -c %s "$ward")), debug file $(stat -c %s "$debug") bytes"

# The manual pages: compressed, carrying the version, formatting without a warning.
version=$(sed -n '1s/^ward //p' "$tmp/version")
for page in "$src"/man/*.1; do
  name=$(basename "$page")
  gz=$root/share/man/man1/$name.gz
  [ -f "$gz" ] || { fail "no $prefix/share/man/man1/$name.gz"; continue; }
  zcat "$gz" | grep -q "^\.TH .*\"ward $version\"" || fail "$name.gz does not carry version $version"
  zcat "$gz" | grep -q '@include' && fail "$name.gz has an unexpanded @include"
  warnings=$(zcat "$gz" | LC_ALL=C.UTF-8 groff -t -man -ww -z -Tutf8 2>&1)
  [ -z "$warnings" ] || fail "$name.gz: $warnings"
done
MANPATH=$root/share/man man -w ward-run >/dev/null 2>&1 || fail "man -w ward-run does not find the page under MANPATH=$prefix/share/man"

# The profiles: the binary holds each one with the SHA-256 of its text (cmake/embed_profiles.cmake),
# so the installed copy is what the binary uses when that digest is in the binary; and the
# binary has no built-in the installation lacks.
builtins=$("$bin" profiles list --names 2>/dev/null | sort | tr '\n' ' ')
if [ -z "$builtins" ]; then  # until `ward profiles` exists: the list an unknown name prints
  builtins=$(cd "$tmp" && "$bin" explain -p builtin:no-such-profile 2>&1 |
             sed -n 's/.*(built-in profiles: \(.*\))$/\1/p' | tr -d ',' | tr ' ' '\n' | sort | tr '\n' ' ')
fi
installed=$(cd "$root/share/ward/profiles" && ls *.toml | sed 's/\.toml$//' | sort | tr '\n' ' ')
[ -n "$builtins" ] && [ "$builtins" = "$installed" ] || fail "built-in profiles '$builtins' but installed '$installed'"
for file in "$root"/share/ward/profiles/*.toml; do
  sum=$(sha256sum "$file" | cut -d' ' -f1)
  grep -qaF "$sum" "$bin" || fail "$(basename "$file") (sha256 $sum) is not the text the binary holds"
  [ "$(stat -c %a "$file")" = 644 ] || fail "$(basename "$file") is not mode 644"
done

# The completions, from the installed tree: the built-in profiles are offered by name.
bash "$src/tests/install/bash_completion_test.sh" "$bin" "$root/share/bash-completion/completions/ward" installed ||
  fail "bash completion of the installed ward"

# make uninstall: nothing of ward left, the shared directories kept.
sh "$src/scripts/install.sh" uninstall "$ward" "$dest" "$prefix" >/dev/null || fail "install.sh uninstall"
left=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||')
[ -z "$left" ] || fail "left after uninstall: $left"
[ -e "$root/share/ward" ] && fail "$prefix/share/ward left after uninstall"
[ -e "$root/lib/debug/.build-id/$(echo "$id" | cut -c1-2)" ] && fail "the debug directory is left after uninstall"

[ "$failures" = 0 ] && echo "make install: $(wc -l < "$tmp/expected") files, all as expected; uninstall removed them"
exit $((failures > 0))
