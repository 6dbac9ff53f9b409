#!/usr/bin/env bash
# The project's test command (README): every Go test against MariaDB, with
# the PHP checks. Starts MariaDB and installs PHP when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-mariadb.sh
scripts/ensure-php.sh
go vet ./...
# -v so the log shows every test that ran; the per-case lines of table and
# fuzz-seed subtests that passed are left out (failures are kept).
go test -count=1 -v -timeout 15m ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)'
# The public API as a user's module meets it (examples/ has its own go.mod).
(cd examples && go vet ./... && go test -count=1 -v ./... 2>&1 | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|\s+--- PASS)')
phpunit -c php-bridge/phpunit.xml  # the PHP bridge (php-bridge/tests), on the same MariaDB
