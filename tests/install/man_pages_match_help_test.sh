#!/bin/sh
# The manual pages (man/) document exactly the options `ward ... --help` lists, one page per
# subcommand, and format without a groff warning.
#   man_pages_match_help_test.sh WARD SOURCE_DIR
set -u
ward=$1 src=$2
status=0
python3 "$src/scripts/man_pages.py" check "$ward" "$src/man" || status=1
out=$(mktemp -d) && trap 'rm -rf "$out"' EXIT
python3 "$src/scripts/man_pages.py" render "$src/man" "$out" test || exit 1
for page in "$out"/*.1; do
  warnings=$(LC_ALL=C.UTF-8 groff -t -man -ww -z -Tutf8 "$page" 2>&1)
  if [ -n "$warnings" ]; then
    echo "man/$(basename "$page"): groff: $warnings"
    status=1
  fi
done
[ "$status" = 0 ] && echo "man/: $(ls "$out" | wc -l) pages, every option of --help documented"
exit $status
