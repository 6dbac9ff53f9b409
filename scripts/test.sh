#!/usr/bin/env bash
# The project's test command (README): every Go test against MariaDB, with
# the PHP checks. Starts MariaDB and installs PHP when missing. The chaos
# suite's short version (internal/chaos) is part of `go test ./...`.
#
# The stock binary is built once, up front, and shared: QUEUETY_BIN names it
# to the Go tests that run it as a subprocess (internal/testbin) and to the
# PHPUnit suite (php-bridge/tests/Support/QueuetyBinary.php), which would
# otherwise each build and link their own. At the end each stage's wall
# time is printed, so a slow run says where it went.
set -euo pipefail
cd "$(dirname "$0")/.."
times=()
stage_start=$SECONDS
# stage NAME: closes the stage that ran since the last call.
stage() { times+=("$(printf '%-28s %4ds' "$1" $((SECONDS - stage_start)))"); stage_start=$SECONDS; }

scripts/ensure-mariadb.sh
scripts/ensure-php.sh
scripts/ensure-browser.sh
scripts/ensure-promtool.sh
scripts/ensure-release-tools.sh
stage "setup"
bin=$(mktemp -d)
# The summary is printed on failure too: a stage that failed shows how long
# it ran.
summary() {
	local code=$?
	printf 'time by stage:\n'
	printf '  %s\n' "${times[@]}"
	if [ "$code" != 0 ]; then
		printf '  %-28s %4ds\n' "(failed in the next stage)" $((SECONDS - stage_start))
	fi
	printf '  %-28s %4ds\n' "total" "$SECONDS"
	return "$code"
}
trap 'summary; rm -rf "$bin"' EXIT
go build -o "$bin/queuety" ./cmd/queuety
export QUEUETY_BIN="$bin/queuety"
stage "build cmd/queuety"
go vet ./...
stage "go vet (compiles everything)"
# -v so the log shows every test that ran; the per-case lines of table and
# fuzz-seed subtests that passed are left out (failures are kept). The
# "ok <package> <time>" lines give each package's run time.
go test -count=1 -v -timeout 15m ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)'
stage "go test ./..."
# The public API as a user's module meets it (examples/ has its own go.mod).
(cd examples && go vet ./... && go test -count=1 -v ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)')
stage "examples/"
# River's drain, the peer `bench jobs` is compared with (its own module, so
# River is no dependency of ours): it must build.
(cd scripts/riverbench && go vet ./...)
stage "scripts/riverbench vet"
# Every fuzz target for a moment beyond its seeds (which `go test` ran);
# `make fuzz` runs them longer.
FUZZTIME=${FUZZTIME:-2s} scripts/fuzz.sh
stage "fuzz"
phpunit -c php-bridge/phpunit.xml  # the PHP bridge (php-bridge/tests), on the same MariaDB
stage "phpunit"
