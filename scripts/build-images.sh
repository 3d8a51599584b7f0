#!/usr/bin/env bash
# Builds coderunner's container images locally from Debian packages, for the
# docker backend on machines without a registry and for the tests:
# debootstrap a minimal Debian root with the groups' toolchains, strip what a
# sandbox must not see (/etc/shadow, /root, /home, /var, ...), link the
# toolchains at the neutral paths the language table uses (/opt/jdk, /opt/go,
# /opt/rust), and `docker import` it as $PREFIX/<group>:<suite>.
#
# Usage: scripts/build-images.sh [GROUP...]     (default: core; "all" for all)
#   core        python3, gcc, g++, bash  -> python, python3, c, cpp, bash
#               (and bubblewrap: the executor image, scripts/build-executor-image.sh,
#               is this root with coderunner added, and runs the bwrap backend)
#   java        default-jdk-headless     -> java
#   javascript  nodejs                   -> javascript
#   go          golang-go                -> go
#   rust        rustc-web, gcc           -> rust
#
# The groups named together share one root holding all their toolchains,
# imported once and tagged under each group's name: the base system and
# the packages the groups have in common (libc, gcc for rust) are fetched,
# unpacked, archived and imported once. "all" takes about 130 s on a cold
# 2-core machine, where a root per group took about 310 s (core 80, java
# 50, javascript 48, go 68, rust 62), and makes a 1.6 GB image under five
# names instead of five images of 2.1 GB in all. Each language still runs
# in the image scripts/docker-images.yaml names.
#
# After the build, the image map of every group whose image the engine holds
# is recorded in /etc/coderunner/docker-images.yaml ($CODERUNNER_IMAGES_RECORD),
# which coderunner reads beneath its configuration: --backend docker then
# runs on these images with no --config. That file is this script's own,
# rewritten by each run; a file there that it did not write is left alone,
# and the user's configuration (--config, CODERUNNER_CONFIG,
# ~/.config/coderunner/config.yaml, /etc/coderunner/config.yaml) is never
# touched: an image it sets for a language wins over the recorded one.
#
# A build is skipped when every tag exists with the label of the same build
# (a hash of this script, the groups and their packages), and its root file
# system is cached as a tarball in $CODERUNNER_IMAGE_CACHE, so a new engine
# (a fresh CI machine with a warm cache) only imports it. Point the docker
# backend at the images with scripts/docker-images.yaml.
#
# Environment: CODERUNNER_IMAGE_PREFIX (coderunner), CODERUNNER_IMAGE_CACHE
# (/var/cache/coderunner-images), CODERUNNER_IMAGES_RECORD
# (/etc/coderunner/docker-images.yaml), DEBIAN_SUITE (bookworm), DEBIAN_MIRROR
# (the host's apt mirror, else http://deb.debian.org/debian). Needs root,
# debootstrap and a running Docker engine.
set -euo pipefail

prefix="${CODERUNNER_IMAGE_PREFIX:-coderunner}"
cache="${CODERUNNER_IMAGE_CACHE:-/var/cache/coderunner-images}"
suite="${DEBIAN_SUITE:-bookworm}"
self="$(readlink -f "$0")"

packages() {
	case "$1" in
	core) echo "python3 gcc g++ libc6-dev bubblewrap" ;;
	java) echo "default-jdk-headless" ;;
	javascript) echo "nodejs" ;;
	go) echo "golang-go" ;;
	# rustc-web is bookworm's current Rust (1.85), where rustc is 1.63:
	# programs written for today's Rust (std::hint::black_box, let-else)
	# would not compile with the older one.
	rust) echo "rustc-web gcc libc6-dev" ;;
	*) return 1 ;;
	esac
}

# languages lists the language ids of lang/recipes.yaml a group's image runs.
languages() {
	case "$1" in
	core) echo "python python3 c cpp bash" ;;
	*) echo "$1" ;;
	esac
}

record="${CODERUNNER_IMAGES_RECORD:-/etc/coderunner/docker-images.yaml}"
marker="# Written by coderunner's scripts/build-images.sh"

# record_images writes the image map of every group whose image the engine
# holds to $record, atomically, unless a file there is not this script's.
record_images() {
	local g tag id tmp dir
	if [ -e "$record" ] && [ "$(head -n 1 "$record")" != "$marker" ]; then
		echo "build-images: $record was not written by this script: left alone" >&2
		return
	fi
	dir="$(dirname "$record")"
	mkdir -p "$dir"
	tmp="$(mktemp "$dir/.docker-images.XXXXXX")"
	{
		echo "$marker"
		echo "# (rewritten on each run): the local images the docker backend uses when"
		echo "# the configuration names none for a language. Edit your own"
		echo "# configuration (it wins over this file), not this file."
		echo "languages:"
		for g in "${all[@]}"; do
			tag="$prefix/$g:$suite"
			docker image inspect "$tag" >/dev/null 2>&1 || continue
			for id in $(languages "$g"); do
				echo "  $id: {image: \"$tag\"}"
			done
		done
	} >"$tmp"
	chmod 0644 "$tmp"
	mv -f "$tmp" "$record"
	echo "build-images: recorded the images in $record"
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

# build makes one root with the toolchains of every group named and tags it
# under each group's name.
build() {
	local groups=("$@") g pkgs="" tags=() tag hash label name tarball root stale=0
	for g in "${groups[@]}"; do
		pkgs+=" $(packages "$g")"
		tags+=("$prefix/$g:$suite")
	done
	pkgs="$(tr ' ' '\n' <<<"$pkgs" | sed '/^$/d' | sort -u | tr '\n' ' ')"
	pkgs="${pkgs% }"
	hash="$( (cat "$self"; echo "${groups[*]} $suite $pkgs") | sha256sum | cut -c1-16)"
	for tag in "${tags[@]}"; do
		label="$(docker image inspect "$tag" --format '{{index .Config.Labels "org.coderunner.build"}}' 2>/dev/null || true)"
		[ "$label" = "$hash" ] || stale=1
	done
	if [ "$stale" = 0 ]; then
		echo "build-images: ${tags[*]} up to date ($hash)"
		return
	fi
	mkdir -p "$cache"
	name="$(IFS=+; echo "${groups[*]}")"
	tarball="$cache/$name-$suite-$hash.tar"
	if [ ! -s "$tarball" ]; then
		root="$(mktemp -d /var/tmp/coderunner-image-XXXXXX)"
		trap 'rm -rf "$root" "$root.log"' EXIT
		echo "build-images: debootstrap $name ($pkgs) from $(mirror)"
		local start=$SECONDS
		debootstrap --variant=minbase --include="${pkgs// /,}" "$suite" "$root" "$(mirror)" >"$root.log" 2>&1 ||
			{ tail -20 "$root.log" >&2; exit 1; }
		strip_root "$root"
		tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
		mv "$tarball.tmp" "$tarball"
		rm -rf "$root" "$root.log"
		trap - EXIT
		# Older builds of the same groups are of no use any more.
		find "$cache" -name "$name-$suite-*.tar" ! -name "$(basename "$tarball")" -delete
		echo "build-images: built $name in $((SECONDS - start)) s"
	fi
	docker import \
		-c "LABEL org.coderunner.build=$hash" \
		-c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		-c "WORKDIR /workspace" \
		"$tarball" "${tags[0]}" >/dev/null
	for tag in "${tags[@]:1}"; do
		docker tag "${tags[0]}" "$tag"
	done
	echo "build-images: imported ${tags[*]} ($hash)"
}

all=(core java javascript go rust)
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(core)
for g in "${groups[@]}"; do
	if [ "$g" = all ]; then
		groups=("${all[@]}")
	elif ! packages "$g" >/dev/null; then
		echo "build-images: unknown group $g" >&2
		exit 2
	fi
done
# Each group once, in the order of the list above, so that the same groups
# make the same build whatever order they are named in.
wanted=()
for g in "${all[@]}"; do
	if [[ " ${groups[*]} " == *" $g "* ]]; then
		wanted+=("$g")
	fi
done
build "${wanted[@]}"
record_images
