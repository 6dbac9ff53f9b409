#!/usr/bin/env bash
# Installs what the release tests need when missing: buildah builds the
# OCI image without a daemon (scripts/release.sh), podman inspects and runs
# it (deploy/image_test.go), dpkg-deb packs the .deb.
set -euo pipefail
have() { command -v buildah >/dev/null 2>&1 && command -v podman >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; }
if have; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "release tools missing: run as root, or: sudo apt-get install buildah podman dpkg" >&2
  exit 1
fi
echo "installing buildah podman..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq buildah podman dpkg >/dev/null
have
