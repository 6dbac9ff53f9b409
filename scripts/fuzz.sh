#!/usr/bin/env bash
# Runs every fuzz target of the module (each `func FuzzX(f *testing.F)` in a
# *_test.go file) for FUZZTIME (default 3s) each, one after the other: the
# fuzzing-instrumented test binary of each package is built once, then run
# once per target, as `go test -run '^$' -fuzz '^FuzzX$' -fuzztime T ./pkg`
# would. `make test` runs it briefly; `make fuzz` runs it longer
# (FUZZTIME=1m). A failing input is saved under the package's
# testdata/fuzz/FuzzX/ (commit it with the fix, as a seed) and stops the
# script.
#
#   FUZZTIME=30s scripts/fuzz.sh              # every target
#   FUZZTIME=5m scripts/fuzz.sh FuzzHandlers  # the targets named
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzztime=${FUZZTIME:-3s}
only=" $* "
cache=$(go env GOCACHE)/fuzz
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
start=$SECONDS
n=0
# inputs counts the fuzz inputs a target has written under testdata.
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
# dir:FuzzName lines, grouped by package directory.
targets=$(grep -rsoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . |
  sed -E 's|^\./||; s|/[^/]*_test\.go:func |:|' | sort -u)
for dir in $(cut -d: -f1 <<<"$targets" | sort -u); do
  names=$(grep "^$dir:" <<<"$targets" | cut -d: -f2)
  if [ "$only" != "  " ]; then
    names=$(for x in $names; do [[ "$only" == *" $x "* ]] && echo "$x"; done || true)
  fi
  [ -n "$names" ] || continue
  importpath=$(go list "./$dir")
  exe="$bin/$(tr / _ <<<"$dir").test"
  go test -c -fuzz=. -o "$exe" "./$dir"
  for name in $names; do
    echo "fuzz: $name (./$dir, $fuzztime)"
    # Go 1.26's fuzz coordinator can fail a target with a bare "context
    # deadline exceeded" when -fuzztime ends while a worker is mid-call
    # (golang/go#75804, fixed in 1.27): no input is written then. A failure
    # that wrote no new input under testdata/fuzz is run once more; one that
    # wrote an input, or fails twice, fails the script.
    corpus="$root/$dir/testdata/fuzz/$name"
    for try in 1 2; do
      before=$(inputs "$corpus")
      if (cd "$root/$dir" && "$exe" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$fuzztime" \
        -test.fuzzcachedir="$cache/$importpath" 2>&1 | grep -v -E '^fuzz: elapsed'; exit "${PIPESTATUS[0]}"); then
        break
      fi
      if [ "$try" = 2 ] || [ "$(inputs "$corpus")" != "$before" ]; then
        echo "fuzz: $name failed (the input is under ./$dir/testdata/fuzz/$name)" >&2
        exit 1
      fi
      echo "fuzz: $name failed without writing an input (Go's fuzz deadline race); once more" >&2
    done
    n=$((n + 1))
  done
done
echo "fuzz: $n targets, $fuzztime each, $((SECONDS - start))s"
