#!/usr/bin/env bash
# Installs the system packages coderunner's tests use, when missing.
# Debian or Ubuntu, as root. Safe to run again.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
[ -x /usr/bin/python3 ] || need+=(python3)
# Interpreter sessions return matplotlib's figures as images; its tests use
# the real library (numpy with it).
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
# The bwrap and docker backends, and the local images of the docker backend.
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
# make test-cgroup2: a QEMU guest that mounts cgroup v2 only, its root
# made with debootstrap into an ext4 image.
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
# scripts/test-rootless.sh drives serve with curl and finds it with pgrep.
command -v curl >/dev/null || need+=(curl)
command -v pgrep >/dev/null || need+=(procps)
# The playground's browser test (internal/cli) drives headless Chromium:
# about 30 s to install.
command -v chromium >/dev/null || need+=(chromium)
# The sandboxes' fontconfig test (sandbox/sandboxtest TestFonts) runs fc-list
# against the system's fonts.
command -v fc-list >/dev/null || need+=(fontconfig)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
# make lint checks the sandbox init's C layout.
command -v clang-format >/dev/null || need+=(clang-format)
if ((${#need[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to install: ${need[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
