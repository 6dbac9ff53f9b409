#!/usr/bin/env bash
# Installs Debian's PHP CLI with PDO MySQL and PHPUnit when missing: the
# tests run PHP against the same database to prove byte compatibility.
set -euo pipefail
have() { command -v php >/dev/null 2>&1 && php -m 2>/dev/null | grep -qi '^pdo_mysql$' && command -v phpunit >/dev/null 2>&1; }
if have; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "PHP missing: run as root, or: sudo apt-get install php-cli php-mysql phpunit" >&2
  exit 1
fi
echo "installing php-cli php-mysql phpunit..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq php-cli php-mysql phpunit >/dev/null
have
