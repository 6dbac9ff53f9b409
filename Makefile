# queuety-go. The README's two commands are `make dev` and `make test`.
.PHONY: dev test build bench chaos fuzz release docs-screenshots

dev: ## run the daemon on a local database with demo jobs
	scripts/ensure-mariadb.sh
	go run ./cmd/queuety dev

test: ## every test (Go and PHP) against MariaDB
	scripts/test.sh

chaos: ## the chaos suite's long version (20 rounds of each scenario, the Galera cluster's included; `make test` runs a short one without Galera)
	scripts/ensure-mariadb.sh
	scripts/ensure-php.sh
	scripts/ensure-galera.sh
	QUEUETY_CHAOS_ROUNDS=$${QUEUETY_CHAOS_ROUNDS:-20} go test -count=1 -v -timeout 120m -tags galera -run '^TestChaos' ./internal/chaos

fuzz: ## every fuzz target for longer (FUZZTIME each, default 1m; `make test` runs each for a few seconds)
	FUZZTIME=$${FUZZTIME:-1m} scripts/fuzz.sh

release: ## binaries, .debs and OCI images for linux/amd64 and linux/arm64 in dist/ (VERSION=v1.2.3 to override git describe)
	scripts/release.sh

build:
	go build -o bin/queuety ./cmd/queuety

bench: build
	bin/queuety bench jobs --count 50000 --concurrency 600

docs-screenshots: ## the dashboard screenshots in docs/img (overview, a workflow, a failing batch, the all-sites overview), from the browser test
	scripts/ensure-mariadb.sh
	scripts/ensure-browser.sh
	QUEUETY_DOCS_SCREENSHOTS=$(CURDIR)/docs/img go test -count=1 -run '^(TestDashboardEveryPageInBrowser|TestDashboardSitesInBrowser)$$' ./queuety/internal/dashboard
