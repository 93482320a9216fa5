#!/bin/sh
# zsh completion of ward (completions/_ward) parses (zsh -n). Skipped (77) where zsh is not
# installed. Its logic is that of the bash completion, which bash_completion_test.sh exercises.
set -u
command -v zsh >/dev/null 2>&1 || { echo "SKIP: zsh is not installed (apt-get install zsh)"; exit 77; }
zsh -n "$1" && echo "zsh: $1 parses"
