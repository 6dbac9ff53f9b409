#!/usr/bin/env bash
# Installs Debian's prometheus package when promtool is missing: the tests
# check and unit-test the shipped alerting rules with it
# (deploy/prometheus/alerts.yml, internal/metrics/deploy_test.go).
set -euo pipefail
have() { command -v promtool >/dev/null 2>&1; }
if have; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "promtool missing: run as root, or: sudo apt-get install prometheus" >&2
  exit 1
fi
echo "installing prometheus (for promtool)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
have
