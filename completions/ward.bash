# bash completion for ward                                          -*- shell-script -*-
#
# Subcommands and options are read from `ward ... --help` of the ward being completed, so that
# they are those of that very binary. Values: profile names (`ward profiles list --names`, else
# the profile files of the installation and of ~/.config/ward/profiles), session ids
# (`ward audit list --json`; running sessions for --session), and the fixed words of
# --workspace, --decision, --allow-degraded and --scope. Paths are left to readline.

# Lines "sub NAME", "opt NAME" (a flag) and "val NAME" (takes a value) of `ward WORDS... --help`.
_ward_help() {
  "$@" --help 2>/dev/null | awk '
    /^[^ ].*:$/ { section = $0; next }
    section ~ /[Oo]ptions/ && /^  -/ {  # "Options:" and every group of options
      spec = substr($0, 3); sub(/  .*/, "", spec)
      n = split(spec, parts, " "); m = split(parts[1], names, ",")
      for (i = 1; i <= m; i++) print (n > 1 ? "val " : "opt ") names[i]
      next
    }
    section == "Subcommands:" && /^  [a-z]/ { print "sub " $1 }'
}

# Profile names, one a line.
_ward_profiles() {
  local ward=$1 names dir
  if names=$("$ward" profiles list --names 2>/dev/null) && [ -n "$names" ]; then
    printf '%s\n' "$names"
    return
  fi
  local bindir
  bindir=$(dirname -- "$(command -v -- "$ward" 2>/dev/null || echo "$ward")")
  for dir in "$bindir/../share/ward/profiles" "${XDG_CONFIG_HOME:-$HOME/.config}/ward/profiles"; do
    for names in "$dir"/*.toml; do
      [ -f "$names" ] && names=${names##*/} && printf '%s\n' "${names%.toml}"
    done
  done
}

# Session ids of the audit trail, newest first; with "running", only sessions still running.
_ward_sessions() {
  local ward=$1 which=${2:-all}
  "$ward" audit list --json 2>/dev/null | tr '{' '\n' | awk -v which="$which" '
    match($0, /"id":"[A-Za-z0-9._-]+"/) {
      id = substr($0, RSTART + 6, RLENGTH - 7)
      if (which != "running" || $0 ~ /"ended":false/) print id
    }'
}

_ward() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local ward=${COMP_WORDS[0]}
  [[ $ward == ~/* ]] && ward=$HOME/${ward#\~/}
  COMPREPLY=()

  # --option=VALUE: bash splits it at '=' into three words, unless COMP_WORDBREAKS lacks '='.
  local joined=""
  if [[ $cur == --*=* ]]; then
    prev=${cur%%=*} cur=${cur#*=} joined=$prev=
  elif [[ $cur == = ]]; then
    cur="" prev=${COMP_WORDS[COMP_CWORD - 1]}
  elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi

  # The command the words before the cursor name, skipping options and their values.
  local -a path=()
  local help positionals=0 i w
  help=$(_ward_help "$ward")
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]]; then
      # The sandboxed command: a command name first, then whatever it takes.
      if ((i == COMP_CWORD - 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return 0
    fi
    if [[ $w == = ]]; then
      ((i++))
      continue
    fi
    if [[ $w == -* ]]; then
      if [[ ${COMP_WORDS[i + 1]} != = ]] && grep -qx "val $w" <<<"$help"; then ((i++)); fi
      continue
    fi
    if ((positionals == 0)) && grep -qx "sub $w" <<<"$help"; then
      path+=("$w")
      help=$(_ward_help "$ward" "${path[@]}")
    else
      ((positionals++))
    fi
  done

  # The value of an option.
  if [[ $prev == -* ]] && grep -qx "val $prev" <<<"$help"; then
    case $prev in
      -p | --profile) mapfile -t COMPREPLY < <(compgen -W "$(_ward_profiles "$ward")" -- "$cur") ;;
      --session) mapfile -t COMPREPLY < <(compgen -W "$(_ward_sessions "$ward" running)" -- "$cur") ;;
      --workspace) mapfile -t COMPREPLY < <(compgen -W "direct overlay copy" -- "$cur") ;;
      --decision) mapfile -t COMPREPLY < <(compgen -W "allow ask none" -- "$cur") ;;
      --allow-degraded) mapfile -t COMPREPLY < <(compgen -W "landlock seccomp limits" -- "$cur") ;;
      --scope) mapfile -t COMPREPLY < <(compgen -W "once session" -- "$cur") ;;
      -C | --workdir | --audit-dir | --state-dir) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
      -w | --write | -r | --read | --deny | --socket | --install | --shell | \
        --approver-secret-file | --upstream-ca) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    esac
    [[ -n $joined ]] && COMPREPLY=("${COMPREPLY[@]/#/$joined}")
    return 0
  fi

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(awk '$1 != "sub" {print $2}' <<<"$help")" -- "$cur")
    return 0
  fi
  local subs
  subs=$(awk '$1 == "sub" {print $2}' <<<"$help")
  if [[ -n $subs ]] && ((positionals == 0)); then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return 0
  fi
  case "${path[*]}" in
    "audit show" | "audit verify")
      mapfile -t COMPREPLY < <(compgen -W "last $(_ward_sessions "$ward")" -- "$cur") ;;
    run | explain | shell-prefix)
      ((positionals == 0)) && mapfile -t COMPREPLY < <(compgen -c -- "$cur") ;;
  esac
  return 0
}

complete -F _ward -o bashdefault -o default ward
