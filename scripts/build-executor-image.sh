#!/usr/bin/env bash
# Builds the service image, coderunner/executor:latest ($CODERUNNER_EXECUTOR_IMAGE):
# the Debian root of scripts/build-images.sh (every toolchain, and bubblewrap)
# with coderunner added as a static binary, a user of its own (uid 10001,
# home /var/lib/coderunner), and `coderunner init -- coderunner serve` as
# its entrypoint, so that the executor runs under an init that forwards
# SIGTERM and reaps the sandboxes' orphans. No registry is used: the root is
# debootstrapped (or taken from the cache in /var/cache/coderunner-images)
# and imported by scripts/build-images.sh, and this script adds one layer
# to it with docker create, docker cp and docker commit, which need no
# builder. Start it with deploy/run-container.sh.
#
# Usage: scripts/build-executor-image.sh (make image). Needs root, Go, gcc,
# debootstrap (for a cold build) and a Docker engine, which it starts with
# scripts/start-dockerd.sh when none answers.
#
# Measured on a 2-core machine: about 5 s when the engine holds the root and
# Go's build cache is warm (the static build of coderunner is most of it,
# 40 s with a cold cache); about 4 minutes the first time on a machine,
# where scripts/build-images.sh debootstraps the root (about 130 s) and
# imports it.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${CODERUNNER_EXECUTOR_IMAGE:-coderunner/executor:latest}"
prefix="${CODERUNNER_IMAGE_PREFIX:-coderunner}"
suite="${DEBIAN_SUITE:-bookworm}"
go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
uid=10001
home=/var/lib/coderunner

scripts/start-dockerd.sh
scripts/build-images.sh all

# Every group's tag is the same root after "all"; a tag that differs was
# built from fewer groups, and would lack toolchains.
base="$(docker image inspect --format '{{.Id}}' "$prefix/core:$suite")"
for g in java javascript go rust; do
	if [ "$(docker image inspect --format '{{.Id}}' "$prefix/$g:$suite")" != "$base" ]; then
		echo "build-executor-image: $prefix/$g:$suite is not the root of every toolchain" >&2
		exit 1
	fi
done

ctx="$(mktemp -d /var/tmp/coderunner-executor-XXXXXX)"
cid=""
cleanup() {
	rm -rf "$ctx"
	[ -z "$cid" ] || docker rm -f "$cid" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Static, so that it runs on the image's libc whatever the build host's:
# the sandbox init is C (cgo), and netgo/osusergo keep glibc's NSS out.
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
start=$SECONDS
install -d -m 0755 "$ctx/usr" "$ctx/usr/local" "$ctx/usr/local/bin" "$ctx/etc" "$ctx/var" "$ctx/var/lib"
CGO_ENABLED=1 "$go" build -trimpath -tags netgo,osusergo \
	-ldflags "-linkmode external -extldflags -static -X main.version=$version -X main.commit=$commit" \
	-o "$ctx/usr/local/bin/coderunner" ./cmd/coderunner
echo "build-executor-image: built coderunner $version in $((SECONDS - start)) s"

cid="$(docker create "$base" /bin/true)"
# The root's own passwd and group, with the executor's user added.
for f in passwd group; do
	docker cp "$cid:/etc/$f" - | tar -xOf - >"$ctx/etc/$f"
	grep -q '^coderunner:' "$ctx/etc/$f" && { echo "build-executor-image: the root already has a coderunner $f entry" >&2; exit 1; }
done
echo "coderunner:x:$uid:$uid:coderunner executor:$home:/usr/sbin/nologin" >>"$ctx/etc/passwd"
echo "coderunner:x:$uid:" >>"$ctx/etc/group"
chmod 0644 "$ctx/etc/passwd" "$ctx/etc/group"
install -d -m 0700 -o "$uid" -g "$uid" "$ctx$home"
# Debian's Go tree links src, api, misc and test relatively into
# /usr/share (src -> ../../share/go-1.19/src): mounted at the sandbox's
# /opt/go those links would point nowhere. The image's links are absolute,
# and /usr is in every sandbox.
docker run --rm --entrypoint /bin/sh "$base" -c \
	'for l in /usr/lib/go-*/*; do [ -L "$l" ] && echo "$l $(readlink -f "$l")"; done; true' |
	while read -r link target; do
		install -d -m 0755 "$ctx$(dirname "$link")"
		ln -s "$target" "$ctx$link"
	done
tar -C "$ctx" --numeric-owner -cf - usr etc var | docker cp - "$cid:/"

old="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
docker commit \
	-c "USER $uid:$uid" \
	-c "ENV HOME=$home" \
	-c "WORKDIR $home" \
	-c "EXPOSE 8080" \
	-c "LABEL org.coderunner.version=$version org.coderunner.commit=$commit" \
	-c 'ENTRYPOINT ["/usr/local/bin/coderunner", "init", "--", "/usr/local/bin/coderunner"]' \
	-c 'CMD ["serve", "--addr", "0.0.0.0:8080"]' \
	"$cid" "$tag" >/dev/null
new="$(docker image inspect --format '{{.Id}}' "$tag")"
# The image this build replaced, unless a container still uses it.
if [ -n "$old" ] && [ "$old" != "$new" ]; then
	docker rmi "$old" >/dev/null 2>&1 || true
fi
echo "build-executor-image: built $tag ($version) in $SECONDS s"
