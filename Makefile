# queuety-go. The README's two commands are `make dev` and `make test`.
.PHONY: dev test build bench

dev: ## run the daemon on a local database with demo jobs
	scripts/ensure-mariadb.sh
	go run ./cmd/queuety dev

test: ## every test (Go and PHP) against MariaDB
	scripts/test.sh

build:
	go build -o bin/queuety ./cmd/queuety

bench: build
	bin/queuety bench jobs --count 50000 --concurrency 600
