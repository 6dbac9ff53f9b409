#!/usr/bin/env bash
# Installs what `make chaos` needs for its private Galera cluster when
# missing: the wsrep provider (galera-4), rsync for the nodes' state
# transfer, HAProxy in front of them, socat, and iptables for the
# partition round.
set -euo pipefail
have() {
  [ -e /usr/lib/galera/libgalera_smm.so ] && command -v rsync >/dev/null 2>&1 &&
    command -v haproxy >/dev/null 2>&1 && command -v socat >/dev/null 2>&1 &&
    command -v iptables >/dev/null 2>&1
}
if have; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "Galera's tools missing: run as root, or: sudo apt-get install galera-4 rsync haproxy socat iptables" >&2
  exit 1
fi
echo "installing galera-4 rsync haproxy socat iptables..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq galera-4 rsync haproxy socat iptables >/dev/null
have
