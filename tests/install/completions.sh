#!/usr/bin/env bash
# The generated completions and man page work in their shells and name every command.
# Usage: completions.sh PTADVISE
set -uo pipefail
ptadvise=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$ptadvise" completion bash >"$scratch/ptadvise.bash" || fail "completion bash"
"$ptadvise" completion zsh >"$scratch/_ptadvise" || fail "completion zsh"
"$ptadvise" completion fish >"$scratch/ptadvise.fish" || fail "completion fish"
"$ptadvise" man >"$scratch/ptadvise.1" || fail "man"
commands=$("$ptadvise" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
[[ $(wc -w <<<"$commands") -ge 6 ]] || fail "could not read the commands from --help: $commands"

# bash: complete as the shell would, through the function the script registers.
# shellcheck source=/dev/null
source "$scratch/ptadvise.bash"
bash_complete() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _ptadvise
  echo "${COMPREPLY[*]}"
}
[[ $(bash_complete ptadvise ch) == check ]] || fail "bash: 'ptadvise ch' -> $(bash_complete ptadvise ch)"
[[ $(bash_complete ptadvise summary --format '') == "text json" ]] || fail "bash: summary --format -> $(bash_complete ptadvise summary --format '')"
[[ $(bash_complete ptadvise check --sh) == --show-config ]] || fail "bash: check --sh -> $(bash_complete ptadvise check --sh)"
[[ -z $(bash_complete ptadvise run -- python3 --) ]] || fail "bash: completed the recorded program's own options"
for command in $commands; do
  [[ " $(bash_complete ptadvise '') " == *" $command "* ]] || fail "bash: command $command is not offered"
done

# zsh: the script must parse; every command is described.
if command -v zsh >/dev/null; then
  zsh -n "$scratch/_ptadvise" || fail "zsh: syntax"
  for command in $commands; do grep -q "^    '$command:" "$scratch/_ptadvise" || fail "zsh: no $command"; done
else
  echo "zsh not installed: zsh completion only generated, not parsed"
fi

# fish: ask fish itself what it would complete.
if command -v fish >/dev/null; then
  fish_complete() { fish --no-config -c "source $scratch/ptadvise.fish; complete -C '$*'" | cut -f1 | sort | tr '\n' ' '; }
  [[ $(fish_complete "ptadvise summary --format ") == "json text " ]] || fail "fish: summary --format -> $(fish_complete "ptadvise summary --format ")"
  [[ $(fish_complete "ptadvise check --show-c") == "--show-config " ]] || fail "fish: check --show-c -> $(fish_complete "ptadvise check --show-c")"
  offered=$(fish_complete "ptadvise ")
  for command in $commands; do [[ " $offered" == *" $command "* ]] || fail "fish: command $command is not offered"; done
else
  echo "fish not installed: fish completion only generated, not run"
fi

# man: renders without groff warnings and documents every command and option of --help.
warnings=$(groff -man -Tutf8 -ww -z "$scratch/ptadvise.1" 2>&1)
[[ -z $warnings ]] || fail "man: groff warnings: $warnings"
page=$(MANWIDTH=200 man -l "$scratch/ptadvise.1" 2>/dev/null)
for command in $commands; do
  [[ $page == *"ptadvise $command "* ]] || fail "man: no section for $command"
  for option in $("$ptadvise" "$command" --help | grep -oE '^  +--[a-z-]+' | tr -d ' '); do
    grep -q -- "^ *$option" <<<"$page" || fail "man: $command $option is missing"
  done
done

((failures == 0)) && echo "completions (bash, zsh, fish) and man page: every command and option"
exit $((failures > 0))
