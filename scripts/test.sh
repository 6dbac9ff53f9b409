#!/usr/bin/env bash
# The project's test command (README): every Go test against MariaDB, with
# the PHP checks. Starts MariaDB and installs PHP when missing. The chaos
# suite's short version (internal/chaos) is part of `go test ./...`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-mariadb.sh
scripts/ensure-php.sh
scripts/ensure-browser.sh
go vet ./...
# -v so the log shows every test that ran; the per-case lines of table and
# fuzz-seed subtests that passed are left out (failures are kept).
go test -count=1 -v -timeout 15m ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)'
# The public API as a user's module meets it (examples/ has its own go.mod).
(cd examples && go vet ./... && go test -count=1 -v ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)')
# River's drain, the peer `bench jobs` is compared with (its own module, so
# River is no dependency of ours): it must build.
(cd scripts/riverbench && go vet ./...)
# Every fuzz target for a moment beyond its seeds (which `go test` ran);
# `make fuzz` runs them longer.
FUZZTIME=${FUZZTIME:-2s} scripts/fuzz.sh
phpunit -c php-bridge/phpunit.xml  # the PHP bridge (php-bridge/tests), on the same MariaDB
