#!/usr/bin/env bash
# Builds the .deb with CPack, installs it with dpkg into a scratch root, checks traces with the installed
# binary (the build and source trees hidden from it), then moves the installed tree and checks again.
# Usage: package.sh BUILD_DIR SOURCE_DIR BUILT_PTADVISE EXAMPLE_TRACE CORPUS_TRACE
set -uo pipefail
build=$1 source=$2 built=$3 example=$4 corpus=$5
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(ls "$scratch"/pkg/ptadvise_*.deb)
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/ptadvise ./usr/share/ptadvise/rules.d/ ./usr/share/ptadvise/python/sitecustomize.py \
  ./usr/share/ptadvise/schemas/check.schema.json ./usr/share/ptadvise/schemas/summary.schema.json \
  ./usr/share/ptadvise/schemas/diff.schema.json ./usr/share/ptadvise/python/ptadvise_hook.py \
  ./usr/share/man/man1/ptadvise.1 ./usr/share/bash-completion/completions/ptadvise \
  ./usr/share/zsh/vendor-completions/_ptadvise ./usr/share/fish/vendor_completions.d/ptadvise.fish; do
  grep -qxF "$path" <<<"$contents" || fail "the package lacks $path"
done
for rule in $(cd "$source/rules.d" && find . -name '*.yaml'); do
  grep -qxF "./usr/share/ptadvise/rules.d/${rule#./}" <<<"$contents" || fail "the package lacks rule $rule"
done
if [[ -d $source/data ]]; then
  for table in $(cd "$source/data" && find . -type f ! -name 'README*'); do
    grep -qxF "./usr/share/ptadvise/data/${table#./}" <<<"$contents" || fail "the package lacks data/$table"
  done
fi
grep -q '\.tests/' <<<"$contents" && fail "the package ships rule fixtures"
for library in libsimdjson libisal; do  # libisal: the gzip inflate of .json.gz traces
  dpkg-deb -f "$deb" Depends | grep -q "$library" || fail "Depends lacks $library: $(dpkg-deb -f "$deb" Depends)"
done

# dpkg -i into a scratch root (its own dpkg database; the libraries come from this machine).
root=$scratch/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null \
  -i "$deb" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i"; }
grep -q '^Status: install ok installed' "$root/var/lib/dpkg/status" || fail "dpkg does not list ptadvise as installed"
installed=$root/usr/bin/ptadvise
strings "$installed" | grep -qF "$source" && fail "the installed binary names the source tree $source"
strings "$installed" | grep -qF "$build" && fail "the installed binary names the build tree $build"

# Runs the installed binary from /, with no PTADVISE_* variables and, where a private mount namespace is
# allowed (root), with the source and build trees hidden under empty mounts: nothing of them is needed.
cp "$example" "$scratch/example.json"
example=$scratch/example.json
hide=""
if unshare --mount true 2>/dev/null; then
  hide="mount -t tmpfs none '$build' && mount -t tmpfs none '$source' && "
  echo "source and build trees hidden from the installed binary"
fi
run_installed() {
  if [[ -n $hide ]]; then
    (cd / && env -u PTADVISE_RULES_DIR -u PTADVISE_DATA_DIR unshare --mount bash -c "$hide exec \"\$@\"" bash "$@")
  else
    (cd / && env -u PTADVISE_RULES_DIR -u PTADVISE_DATA_DIR "$@")
  fi
}
check_with() {
  local binary=$1 trace=$2 label=$3
  local code
  if [[ $binary == "$built" ]]; then
    (cd / && "$binary" check --format json "$trace") >"$scratch/$label.json" 2>"$scratch/$label.err"
  else
    run_installed "$binary" check --format json "$trace" >"$scratch/$label.json" 2>"$scratch/$label.err"
  fi
  code=$?
  [[ $code == 0 || $code == 1 ]] || { cat "$scratch/$label.err"; fail "$label: check exited $code"; }
  echo $code
}
expected_rules() { python3 -c 'import json,sys; print(" ".join(sorted(f["rule_id"] for t in json.load(open(sys.argv[1]))["traces"] for f in t["findings"])))' "$1"; }

run_installed "$installed" --version | grep -qF "rule set $(find "$source/rules.d" -name '*.yaml' | wc -l) rules" ||
  fail "installed --version: $(run_installed "$installed" --version)"
run_installed "$installed" --version | grep -qxF "data $root/usr/share/ptadvise" || fail "installed data directory"
run_installed "$installed" explain PTA101 | grep -qF "Defined in $root/usr/share/ptadvise/rules.d/" ||
  fail "the installed binary does not use its own rules"

# The Python package finds the installed binary beside itself (torch.profiler hook, without $PTADVISE).
found=$(cd / && env -u PTADVISE python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import ptadvise_hook; print(ptadvise_hook.find_ptadvise())' \
  "$root/usr/share/ptadvise/python")
[[ $found == "$installed" ]] || fail "the installed ptadvise_hook finds '$found', not $installed"

for trace in "$example" "$corpus"; do
  [[ -f $trace ]] || continue
  name=$(basename "$trace")
  want_code=$(check_with "$built" "$trace" "built-$name")
  got_code=$(check_with "$installed" "$trace" "installed-$name")
  [[ $want_code == "$got_code" ]] || fail "$name: exit $got_code installed, $want_code from the build tree"
  want=$(expected_rules "$scratch/built-$name.json")
  got=$(expected_rules "$scratch/installed-$name.json")
  [[ -n $want && $want == "$got" ]] || fail "$name: installed findings [$got], build tree [$want]"
  echo "installed check $name: exit $got_code, findings [$got]"
done

# Relocated: the same tree under another prefix.
mv "$root/usr" "$scratch/elsewhere"
run_installed "$scratch/elsewhere/bin/ptadvise" check --exit-zero "$example" >/dev/null 2>"$scratch/moved.err" ||
  { cat "$scratch/moved.err"; fail "the moved installation cannot check"; }
run_installed "$scratch/elsewhere/bin/ptadvise" --version | grep -qxF "data $scratch/elsewhere/share/ptadvise" ||
  fail "the moved installation does not find its data beside itself"

((failures > 0)) && exit 1
if [[ ! -f $corpus ]]; then
  echo "skipped: $corpus is absent (the shared trace corpus lives beside the project); only the bundled example was checked"
  exit 77
fi
echo "package: built, installed with dpkg into a scratch root, checked, relocated"
