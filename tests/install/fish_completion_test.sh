#!/bin/sh
# fish completion of ward (completions/ward.fish): parses (fish -n), and `complete -C` offers
# the subcommands, options and values a user expects. Skipped (77) where fish is not installed.
#   fish_completion_test.sh WARD COMPLETION_FILE
set -u
ward=$1 completion=$2
command -v fish >/dev/null 2>&1 || { echo "SKIP: fish is not installed (apt-get install fish)"; exit 77; }
fish -n "$completion" || { echo "FAIL: fish -n $completion"; exit 1; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/config/ward/profiles"
ln -s "$ward" "$tmp/bin/ward"
printf 'extends = "default"\n' > "$tmp/config/ward/profiles/mine.toml"
failures=0
expect() {  # expect LINE CANDIDATE...
  line=$1; shift
  got=$(PATH="$tmp/bin:$PATH" XDG_CONFIG_HOME="$tmp/config" fish -c \
        "source '$completion'; complete -C '$line'" | cut -f1)
  for want in "$@"; do
    if ! printf '%s\n' "$got" | grep -qxF -- "$want"; then
      echo "FAIL: fish: '$line<TAB>' does not offer '$want'; it offers: $(echo $got | cut -c1-300)"
      failures=$((failures + 1))
    fi
  done
}
expect "ward " run check explain why audit approvals quarantine diff apply discard
expect "ward au" audit
expect "ward run --pro" --profile --proxy-connections
expect "ward run -p " mine
expect "ward run --workspace " direct overlay copy
expect "ward run --workspace=o" --workspace=overlay
expect "ward audit --state-dir /tmp " list show tail verify
expect "ward audit show " last
expect "ward run -- ech" echo
[ "$failures" = 0 ] && echo "fish completion: every expected candidate offered"
exit $((failures > 0))
