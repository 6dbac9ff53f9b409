#!/usr/bin/env bash
# Starts the local MariaDB the tests and `queuety dev` use, when it is down.
set -euo pipefail
ping() { mysqladmin --protocol=tcp -h127.0.0.1 -P3306 -uroot ping >/dev/null 2>&1; }
if ping; then exit 0; fi
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  echo "MariaDB is not running and not installed: apt-get install mariadb-server, or point QUEUETY_TEST_DSN at a server" >&2
  exit 1
fi
echo "starting MariaDB..." >&2
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
for _ in $(seq 1 60); do
  if ping; then exit 0; fi
  sleep 1
done
echo "MariaDB did not come up within 60 s" >&2
exit 1
