#!/bin/bash
# bash completion of ward (completions/ward.bash), as bash calls it: COMP_WORDS/COMP_CWORD set,
# _ward called, COMPREPLY read.
#   bash_completion_test.sh WARD COMPLETION_FILE
# With a third argument "installed", WARD is an installed ward whose built-in profiles are under
# PREFIX/share/ward/profiles, and their names are expected too.
set -u
ward=$1 completion=$2 installed=${3:-}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state
mkdir -p "$HOME" "$XDG_CONFIG_HOME/ward/profiles" "$tmp/ws"
printf 'extends = "default"\n' > "$XDG_CONFIG_HOME/ward/profiles/mine.toml"
# One session in the audit trail (recorded even when this machine refuses the run).
(cd "$tmp/ws" && "$ward" run -- true >/dev/null 2>&1)
session=$("$ward" audit list --json | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
[ -n "$session" ] || { echo "FAIL: ward run left no session in the audit trail to complete"; exit 1; }

failures=0
# complete WORD... (the last word is the one under the cursor): the candidates, one a line.
complete() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
           COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; _ward; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$completion" "$ward" "$@"
}
# expect "WORDS" CANDIDATE...: each candidate is offered.
expect() {
  local words=$1; shift
  local got
  # shellcheck disable=SC2086
  got=$(eval complete $words)
  for want in "$@"; do
    if ! grep -qxF -- "$want" <<<"$got"; then
      echo "FAIL: ward $words<TAB> does not offer '$want'; it offers: $(echo $got | cut -c1-300)"
      failures=$((failures + 1))
    fi
  done
}
# refuse "WORDS" CANDIDATE...: none of them is offered.
refuse() {
  local words=$1; shift
  local got
  got=$(eval complete $words)
  for bad in "$@"; do
    if grep -qxF -- "$bad" <<<"$got"; then
      echo "FAIL: ward $words<TAB> offers '$bad'"
      failures=$((failures + 1))
    fi
  done
}

expect "''" run check explain why audit approvals approve deny grants quarantine diff apply discard serve mcp
expect "ru" run
refuse "ru" check
expect "run --pro" --profile --proxy-connections
expect "run -" -p -w -n --allow-net --json-status --workspace
expect "explain --" --json --raw-terminal
refuse "why --" --raw-terminal --json-status
expect "run -p ''" mine
expect "run --profile=''" --profile=mine
expect "run --profile = m" mine
expect "run --workspace ''" direct overlay copy
expect "run --workspace = o" overlay
expect "mcp --workspace ''" direct overlay copy
expect "hook claude-pretooluse --decision ''" allow ask none
expect "run --allow-degraded ''" landlock seccomp limits
expect "approve 1 --scope ''" once session
expect "audit ''" list show tail verify
expect "audit --state-dir /tmp ''" list show tail verify
expect "audit list -" --json
expect "audit tail -" -f --follow -n --lines
expect "audit show ''" last "$session"
expect "audit show ${session:0:9}" "$session"
expect "audit verify last ''" "$session"
expect "quarantine ''" list show restore drop
expect "grants ''" list revoke
expect "run -p default -n example.org -- ''" sh
expect "run -- ech" echo
refuse "run -- echo ''" run
expect "shell-prefix --sh" --shell
if [ "$installed" = installed ]; then
  expect "run -p ''" default claude-code codex gemini aider opencode mine
fi
[ "$failures" = 0 ] && echo "bash completion: every expected candidate offered"
exit $((failures > 0))
