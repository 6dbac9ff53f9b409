#!/usr/bin/env bash
# The release (`make release`, and CI): into dist/,
#
#   queuety_<version>_linux_<arch>          static binaries (CGO_ENABLED=0)
#   queuety_<debversion>_<arch>.deb          the Debian package (docs/install.md)
#   queuety_<version>_linux_<arch>.oci.tar   the OCI image, an oci-archive
#   SHA256SUMS                               of all of them
#
# for linux/amd64 and linux/arm64, and the images in local container
# storage as localhost/queuety:<version>-<arch> with a manifest list
# localhost/queuety:<version>. Needs Go, dpkg-deb and buildah; no Docker
# daemon, no network beyond the Go module cache.
#
# The version is `git describe --tags` (v1.2.3, or v1.2.3-4-gabcdef1 after
# the tag, v0.0.0-<commits>-g<hash> before any tag, -dirty with changes),
# or VERSION. It is linked into the binary (`queuety version`).
#
# `scripts/release.sh version` prints the version and the Debian version
# and builds nothing (CI names its uploads with them).
#
# Environment: VERSION, DIST (dist), ARCHES ("amd64 arm64"), IMAGE (1; 0
# skips the image), DEB_COMPRESSION (xz, the smallest; the tests take gzip,
# which costs a fifth of xz's CPU time).
set -euo pipefail
cd "$(dirname "$0")/.."

DIST=${DIST:-dist}
ARCHES=${ARCHES:-amd64 arm64}
IMAGE=${IMAGE:-1}
DEB_COMPRESSION=${DEB_COMPRESSION:-xz}
MODULE=github.com/queuety-go/queuety

if [[ -z ${VERSION:-} ]]; then
	if VERSION=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
		:
	else
		VERSION="v0.0.0-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)"
		git diff --quiet HEAD 2>/dev/null || VERSION+=-dirty
	fi
fi
[[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$ ]] || {
	echo "release: VERSION $VERSION is not v<major>.<minor>.<patch>[-suffix]" >&2
	exit 2
}
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# Reproducible: every timestamp is the commit's (dpkg-deb and buildah read it).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

# Debian's version: v1.2.3 -> 1.2.3; v1.2.3-4-gabc -> 1.2.3+4.gabc and
# v1.2.3-dirty -> 1.2.3+dirty (after 1.2.3, as the changes are); other
# suffixes (-rc.1) -> 1.2.3~rc.1 (before it).
debversion() {
	local v=${1#v} base rest
	base=${v%%-*}
	[[ $v == "$base" ]] && { echo "$base"; return; }
	rest=${v#"$base"-}
	if [[ $rest =~ ^([0-9]+-g[0-9a-f]+|dirty$) ]]; then
		echo "$base+${rest//-/.}"
	else
		echo "$base~${rest//-/.}"
	fi
}
DEBVERSION=$(debversion "$VERSION")
if [[ ${1:-} == version ]]; then
	echo "$VERSION $DEBVERSION"
	exit 0
fi

mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "release $VERSION (deb $DEBVERSION) for $ARCHES into $DIST" >&2

build_binary() { # arch
	CGO_ENABLED=0 GOOS=linux GOARCH=$1 go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X $MODULE/queuety/cli.Version=$VERSION -X $MODULE/queuety/cli.Commit=$COMMIT" \
		-o "$DIST/queuety_${VERSION}_linux_$1" ./cmd/queuety
}

# The .deb, with dpkg-deb: it is on every Debian machine, needs no
# download or build of a packager, and the package is a file list and
# four small control files (see docs/install.md for why not nfpm).
build_deb() { # arch
	local arch=$1 root="$work/deb-$1"
	install -D -m 0755 "$DIST/queuety_${VERSION}_linux_$arch" "$root/usr/bin/queuety"
	install -D -m 0644 deploy/queuety.service "$root/usr/lib/systemd/system/queuety.service"
	install -D -m 0644 deploy/queuety@.service "$root/usr/lib/systemd/system/queuety@.service"
	# 0640 root:queuety once postinst made the group: the DSN is a secret.
	install -D -m 0640 deploy/queuety.env "$root/etc/queuety/queuety.env"
	install -D -m 0644 deploy/site.env.example "$root/etc/queuety/site.env.example"
	# The bridge: the worker script and the classes it loads (no tests).
	local bridge="$root/usr/share/queuety/php-bridge"
	install -d "$bridge"
	cp -r php-bridge/bin php-bridge/src php-bridge/autoload.php php-bridge/composer.json php-bridge/README.md "$bridge/"
	chmod 0755 "$bridge/bin/queuety-php-worker"
	install -D -m 0644 deploy/debian/copyright "$root/usr/share/doc/queuety/copyright"
	# Shell completions: the same text for every architecture, so written by
	# whichever built binary runs here (the host's).
	local host
	for host in "$DIST"/queuety_"${VERSION}"_linux_*; do
		[[ $host == *.oci.tar ]] && continue
		if "$host" completion bash >"$work/completion.bash" 2>/dev/null; then
			install -D -m 0644 "$work/completion.bash" "$root/usr/share/bash-completion/completions/queuety"
			"$host" completion zsh | install -D -m 0644 /dev/stdin "$root/usr/share/zsh/vendor-completions/_queuety"
			"$host" completion fish | install -D -m 0644 /dev/stdin "$root/usr/share/fish/vendor_completions.d/queuety.fish"
			break
		fi
	done
	install -d "$root/DEBIAN"
	install -m 0755 deploy/debian/postinst deploy/debian/postrm "$root/DEBIAN/"
	printf '/etc/queuety/queuety.env\n/etc/queuety/site.env.example\n' >"$root/DEBIAN/conffiles"
	local size
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	sed -e "s/@VERSION@/$DEBVERSION/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
		deploy/debian/control >"$root/DEBIAN/control"
	find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	dpkg-deb --root-owner-group "-Z$DEB_COMPRESSION" --build "$root" "$DIST/queuety_${DEBVERSION}_$arch.deb" >/dev/null
}

# The image, with buildah (no daemon): the static binary on an empty base
# (FROM scratch: nothing else to patch; deploy/Containerfile says why).
build_image() { # arch
	local arch=$1 ctx="$work/image-$1"
	install -D -m 0755 "$DIST/queuety_${VERSION}_linux_$arch" "$ctx/rootfs/usr/bin/queuety"
	install -D -m 0644 deploy/image/passwd "$ctx/rootfs/etc/passwd"
	install -D -m 0644 deploy/image/group "$ctx/rootfs/etc/group"
	# TLS to a managed database verifies against the usual CA bundle.
	install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"
	local tag="localhost/queuety:$VERSION-$arch"
	buildah build --quiet --platform "linux/$arch" --timestamp "$SOURCE_DATE_EPOCH" \
		--build-arg "VERSION=$VERSION" --build-arg "REVISION=$COMMIT" \
		--build-arg "CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" \
		-f deploy/Containerfile -t "$tag" "$ctx" >/dev/null
	# An OCI layout, then tarred with fixed times and order: buildah's own
	# oci-archive stamps each entry with the time of the push.
	buildah push --quiet "$tag" "oci:$work/oci-$arch:queuety:$VERSION"
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		-C "$work/oci-$arch" -cf "$DIST/queuety_${VERSION}_linux_$arch.oci.tar" .
}

for arch in $ARCHES; do
	build_binary "$arch"
done
artifacts=()
for arch in $ARCHES; do
	build_deb "$arch"
	artifacts+=("queuety_${VERSION}_linux_$arch" "queuety_${DEBVERSION}_$arch.deb")
	if [[ $IMAGE == 1 ]]; then
		build_image "$arch"
		artifacts+=("queuety_${VERSION}_linux_$arch.oci.tar")
	fi
done
if [[ $IMAGE == 1 ]]; then
	list="localhost/queuety:$VERSION"
	buildah manifest rm "$list" >/dev/null 2>&1 || true
	buildah manifest create "$list" >/dev/null
	for arch in $ARCHES; do
		buildah manifest add "$list" "containers-storage:localhost/queuety:$VERSION-$arch" >/dev/null
	done
fi

# Only this release's files: dist/ may hold an earlier one.
(cd "$DIST" && sha256sum -- "${artifacts[@]}" >SHA256SUMS)
(cd "$DIST" && ls -l -- "${artifacts[@]}" SHA256SUMS) >&2
