#!/usr/bin/env bash
# Builds coderunner's container images locally from Debian packages, for the
# docker backend on machines without a registry and for the tests:
# debootstrap a minimal Debian root with the group's toolchains, strip what a
# sandbox must not see (/etc/shadow, /root, /home, /var, ...), link the
# toolchains at the neutral paths the language table uses (/opt/jdk, /opt/go,
# /opt/rust), and `docker import` it as $PREFIX/<group>:<suite>.
#
# Usage: scripts/build-images.sh [GROUP...]     (default: core; "all" for all)
#   core        python3, gcc, g++, bash  -> python, python3, c, cpp, bash
#   java        default-jdk-headless     -> java
#   javascript  nodejs                   -> javascript
#   go          golang-go                -> go
#   rust        rustc, gcc               -> rust
#
# A build is skipped when the image exists with the label of the same build
# (a hash of this script, the group and its packages), and its root file
# system is cached as a tarball in $CODERUNNER_IMAGE_CACHE, so a new engine
# (a fresh CI machine with a warm cache) only imports it. Point the docker
# backend at the images with scripts/docker-images.yaml.
#
# Environment: CODERUNNER_IMAGE_PREFIX (coderunner), CODERUNNER_IMAGE_CACHE
# (/var/cache/coderunner-images), DEBIAN_SUITE (bookworm), DEBIAN_MIRROR
# (the host's apt mirror, else http://deb.debian.org/debian). Needs root,
# debootstrap and a running Docker engine.
set -euo pipefail

prefix="${CODERUNNER_IMAGE_PREFIX:-coderunner}"
cache="${CODERUNNER_IMAGE_CACHE:-/var/cache/coderunner-images}"
suite="${DEBIAN_SUITE:-bookworm}"
self="$(readlink -f "$0")"

packages() {
	case "$1" in
	core) echo "python3 gcc g++ libc6-dev" ;;
	java) echo "default-jdk-headless" ;;
	javascript) echo "nodejs" ;;
	go) echo "golang-go" ;;
	rust) echo "rustc gcc libc6-dev" ;;
	*) return 1 ;;
	esac
}

mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then
		echo "$DEBIAN_MIRROR"
		return
	fi
	# The host's own Debian mirror, from a deb822 or a one-line source.
	local m
	m="$(grep -hoE '^(URIs:|deb) +(\[[^]]*\] +)?https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -oE 'https?://[^ ]+' | head -1 || true)"
	echo "${m:-http://deb.debian.org/debian}"
}

# strip removes from the root what no sandbox may see or needs.
strip_root() {
	local r="$1"
	rm -rf "$r"/var "$r"/run "$r"/root "$r"/home "$r"/boot "$r"/srv "$r"/mnt "$r"/media \
		"$r"/etc/shadow* "$r"/etc/gshadow* "$r"/etc/ssh "$r"/etc/security/opasswd \
		"$r"/usr/share/doc "$r"/usr/share/man "$r"/usr/share/info "$r"/usr/share/locale
	mkdir -p "$r"/workspace "$r"/tmp "$r"/opt
	chmod 1777 "$r"/tmp
	# Neutral toolchain paths of lang/recipes.yaml.
	local jdk
	jdk="$(find "$r"/usr/lib/jvm -maxdepth 1 -name 'java-*-openjdk-*' -type d 2>/dev/null | head -1 || true)"
	[ -n "$jdk" ] && ln -sfn "${jdk#"$r"}" "$r"/opt/jdk
	[ -d "$r"/usr/lib/go ] && ln -sfn /usr/lib/go "$r"/opt/go
	[ -x "$r"/usr/bin/rustc ] && ln -sfn /usr "$r"/opt/rust
	true
}

build() {
	local group="$1" pkgs tag hash label tarball root
	pkgs="$(packages "$group")" || { echo "build-images: unknown group $group" >&2; exit 2; }
	tag="$prefix/$group:$suite"
	hash="$( (cat "$self"; echo "$group $suite $pkgs") | sha256sum | cut -c1-16)"
	label="$(docker image inspect "$tag" --format '{{index .Config.Labels "org.coderunner.build"}}' 2>/dev/null || true)"
	if [ "$label" = "$hash" ]; then
		echo "build-images: $tag is up to date ($hash)"
		return
	fi
	mkdir -p "$cache"
	tarball="$cache/$group-$suite-$hash.tar"
	if [ ! -s "$tarball" ]; then
		root="$(mktemp -d /var/tmp/coderunner-image-XXXXXX)"
		trap 'rm -rf "$root"' RETURN
		echo "build-images: debootstrap $group ($pkgs) from $(mirror)"
		local start=$SECONDS
		debootstrap --variant=minbase --include="${pkgs// /,}" "$suite" "$root" "$(mirror)" >"$root.log" 2>&1 ||
			{ tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
		rm -f "$root.log"
		strip_root "$root"
		tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
		mv "$tarball.tmp" "$tarball"
		# Older builds of the group are of no use any more.
		find "$cache" -name "$group-$suite-*.tar" ! -name "$(basename "$tarball")" -delete
		echo "build-images: built $group in $((SECONDS - start)) s"
	fi
	docker import \
		-c "LABEL org.coderunner.build=$hash" \
		-c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		-c "WORKDIR /workspace" \
		"$tarball" "$tag" >/dev/null
	echo "build-images: imported $tag ($hash)"
}

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(core)
[ "${groups[0]}" != all ] || groups=(core java javascript go rust)
for g in "${groups[@]}"; do
	build "$g"
done
