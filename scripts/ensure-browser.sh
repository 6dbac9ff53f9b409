#!/usr/bin/env bash
# Installs Debian's headless Chromium and its WebDriver when missing: the
# dashboard's browser test (queuety/internal/dashboard) drives /usr/bin/chromium
# through /usr/bin/chromedriver.
set -euo pipefail
have() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }
if have; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "Chromium missing: run as root, or: sudo apt-get install chromium chromium-driver" >&2
  exit 1
fi
echo "installing chromium chromium-driver..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium chromium-driver >/dev/null
have
