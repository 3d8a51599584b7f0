#!/usr/bin/env bash
# Runs test suites inside a Linux guest whose kernel mounts cgroup v2
# only (cgroup_no_v1=all), so that the cgroup v2 code paths run on the
# kernel's own cgroup v2, whatever the host has: the cgroup package's
# kernel tests, the native and bwrap backends' suites (conformance,
# attacks, judging, delegated subtrees) and the runner's judge tests, as
# root and again as an unprivileged user in a delegated subtree.
#
# The guest is Debian bookworm (debootstrap --variant=minbase plus
# PACKAGES, with Debian's kernel and its initramfs), booted by QEMU with
# init= a small script that mounts the 9p share and runs
# scripts/cgroup2-guest.sh from it, which runs each suite and writes the
# logs and exit statuses to the share. The root and its disk image are
# cached under CACHE, keyed on the package list, so only the first run
# pays for debootstrap. The test binaries are built on the host with
# go test -c.
#
# KVM is used when it boots the guest; otherwise (Debian's kernel does not
# boot under KVM on some hosts) it falls back to TCG emulation and says so.
# Env: SUITES (the suites, one a line: NAME PACKAGE USER RUN SKIP, see
# scripts/cgroup2-guest.sh; default below; "ci" for CI's set), CACHE
# (/var/cache/coderunner/cgroup2-guest), MIRROR (http://deb.debian.org/debian),
# MEM (3G), TIMEOUT (3600 seconds for the whole guest run), ACCEL (auto,
# kvm or tcg).
# Exit 0 when every suite passes.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)}"
# TestLanguages needs every toolchain of the default table; the guest has
# sh, python3, node and C/C++ only, so it runs without CI=true (missing
# toolchains skip). The runner's tests that need other toolchains (Go,
# Java) are left out, and so are the cgroup package's tests on fixture
# trees (the guest has no source tree; they run on any host).
#
# The interpreter sessions run on native and bwrap in full, and on docker
# with warm containers (their launcher, whose counters the backend reads
# from the container's cgroup), in the cases that kill or end an
# interpreter and look for what is left: emulated, each docker case takes
# 20 to 70 s (a warm pool refilled beside it), all of them 500 s with
# warm containers and 280 s more without. TestNativeMatplotlib needs
# matplotlib, which the guest has not (150 MB, and a minute to import
# emulated); the driver's side of figures runs everywhere (Figures).
# TestNativeDriverNotReading is node's driver's own (20 s emulated).
#
# The docker backend's suite runs on the guest's engine (the cgroupfs
# driver on cgroup v2) with an image made from the guest's root (sh,
# coreutils, python3, node; no compiler, so no judge or language tests):
# the conformance suite's cases that read the container's cgroup or hold
# it to a limit (time, CPU, memory, processes, measures, a child left
# running, a cancel), each with its look for leftovers, with and without
# warm containers; the check that the counters are read from the
# container's cgroup v2 directory; a reused container cleaned between
# runs (its processes killed through cgroup.procs; not the same test
# without reuse, 36 s); the launcher's runs, their limits and counters,
# and its deaths; and the pool's cleanup and the removal of stale
# containers. The launcher's protocol, the engine's faults and the
# image's handling do not depend on cgroups, and run on any host.
DEFAULT_SUITES="cgroup internal/cgroup root ^TestKernel -
native sandbox/native root - ^TestLanguages\$
native-languages sandbox/native root-noci ^TestLanguages\$ -
bwrap sandbox/bwrap root - ^TestLanguages\$
runner runner root ^(TestSmallMemoryLimit|TestSandboxPerTest|TestJudgeMemoryBounded|TestHostileCompiles|TestCompileWorkspaceCapped)\$ -
interp interp root - ^(TestNativeMatplotlib|TestNativeDriverNotReading|TestDocker|TestDockerWarm)\$
interp-docker-warm interp root ^TestDockerWarm\$/^(MemoryKillsOnlyItsSession|UninterruptibleRestarts|DeleteEndsEverything)\$ -
docker-limits sandbox/docker root ^TestConformance\$/.*/^(True|WallTimeLimit|CPUTimeLimit|MemoryLimit|MemoryExceededByChild|ForkBomb|BackgroundChildKilled|Cancel|CPUAndMemoryMeasured|Samples)\$ -
docker sandbox/docker root ^(TestLocateCgroup|TestKeyed|TestContainerCgroupHere|TestReuse|TestLaunchedEnds|TestLaunchedDeadLauncher|TestLauncherDiesAfterTake|TestWarmPool|TestWarmClose|TestWarmContainerGone|TestStaleContainersRemovedAtStart)\$ ^TestReuse\$/^per-run\$
native-rootless sandbox/native rootless - ^TestLanguages\$
bwrap-rootless sandbox/bwrap rootless - ^TestLanguages\$"
# CI's set (SUITES=ci): the same less the conformance suite's repeats on
# native's other paths (a warm pool, the host tree kept attached), which
# no cgroup code tells apart and which take half the time under TCG, and
# less the run without CI=true.
CI_SUITES="$(printf '%s\n' "$DEFAULT_SUITES" | sed -e '/^native-languages /d' -e 's/^\(native sandbox\/native root - \).*/\1^(TestLanguages|TestConformanceWarm|TestConformanceHostTreeAttached)$/')"
SUITES="${SUITES:-$DEFAULT_SUITES}"
[ "$SUITES" = ci ] && SUITES="$CI_SUITES"
CACHE="${CACHE:-/var/cache/coderunner/cgroup2-guest}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
MEM="${MEM:-3G}"
TIMEOUT="${TIMEOUT:-3600}"
ACCEL="${ACCEL:-auto}"
SUITE=bookworm
# nodejs for the interpreter sessions' JavaScript, docker.io for the
# docker backend's suite and the interpreters on docker.
PACKAGES="linux-image-amd64,initramfs-tools,kmod,python3,gcc,g++,libc6-dev,bubblewrap,procps,fontconfig,fonts-dejavu-core,nodejs,docker.io"

if [ "$(id -u)" != 0 ]; then
	echo "test-cgroup2: needs root (debootstrap, and the tests run as root)" >&2
	exit 1
fi
for tool in debootstrap qemu-system-x86_64 mkfs.ext4; do
	command -v "$tool" >/dev/null || {
		echo "test-cgroup2: needs $tool (apt-get install debootstrap qemu-system-x86 e2fsprogs)" >&2
		exit 1
	}
done
started=$(date +%s)

# The guest's init, in its disk image: it mounts the 9p share and hands
# over to the share's guest-init.sh (written below at each run). The
# initramfs has already mounted /proc and /sys.
stub='#!/bin/sh
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
modprobe -q 9pnet_virtio
modprobe -q 9p
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /host
exec /bin/sh /host/guest-init.sh
'

# The guest: root directory with kernel and initramfs (keyed on the
# package list), and its disk image (keyed on the init too), cached.
key=$(printf '%s\n' "$SUITE" "$MIRROR" "$PACKAGES" | sha256sum | cut -c1-16)
guest="$CACHE/$key"
root="$guest/root"
if [ ! -f "$guest/root.done" ]; then
	echo "test-cgroup2: building the guest in $guest (debootstrap, a few minutes)"
	rm -rf "$guest"
	mkdir -p "$guest"
	debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$guest/debootstrap.log" 2>&1 || {
		tail -20 "$guest/debootstrap.log" >&2
		echo "test-cgroup2: debootstrap failed, log in $guest/debootstrap.log" >&2
		exit 1
	}
	cp "$(find "$root/boot" -name 'vmlinuz-*' | sort | tail -1)" "$guest/vmlinuz"
	cp "$(find "$root/boot" -name 'initrd.img-*' | sort | tail -1)" "$guest/initrd.img"
	echo "cgroup2-guest" >"$root/etc/hostname"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
	touch "$guest/root.done"
fi
image="$guest/root-$(printf '%s' "$stub" | sha256sum | cut -c1-16).img"
if [ ! -f "$image" ]; then
	echo "test-cgroup2: making the guest's disk image $image"
	rm -f "$guest"/root*.img
	printf '%s' "$stub" >"$root/sbin/cgroup2-init"
	chmod 755 "$root/sbin/cgroup2-init"
	# Room for what the suites write: the Docker engine's image and
	# containers above all (the file is sparse; writes go to QEMU's
	# snapshot, never to the cached image).
	size=$(($(du -sm "$root" | cut -f1) + 3072))
	mkfs.ext4 -q -F -L cgroup2root -d "$root" "$image.new" "${size}M"
	mv "$image.new" "$image"
fi

# The test binaries, the guest's init, the suites and the results, on
# the 9p share.
work=$(mktemp -d /tmp/cgroup2-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/out"
printf '%s\n' "$SUITES" >"$work/suites"
for p in $(awk '$1 !~ /^#/ && NF { print $2 }' "$work/suites" | sort -u); do
	echo "test-cgroup2: go test -c ./$p/"
	"$GO" test -c -o "$work/bin/$(echo "$p" | tr / _).test" "./$p/"
done
cp scripts/cgroup2-guest.sh "$work/guest-init.sh"

accel_args() {
	case "$1" in
	kvm) echo "-accel kvm -cpu host" ;;
	tcg) echo "-accel tcg,thread=multi -cpu max" ;;
	esac
}
# run_guest ACCEL TIMEOUT: boots the guest; the console goes to work/console.log.
run_guest() {
	# shellcheck disable=SC2046 # the accelerator's options are words
	timeout "$2" qemu-system-x86_64 $(accel_args "$1") -m "$MEM" -smp 2 \
		-nographic -no-reboot -serial "file:$work/console.log" -monitor none \
		-kernel "$guest/vmlinuz" -initrd "$guest/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 init=/sbin/cgroup2-init" \
		-drive "file=$image,format=raw,if=virtio,snapshot=on" \
		-virtfs "local,path=$work,mount_tag=host,security_model=none" \
		-netdev user,id=n0 -device virtio-net-pci,netdev=n0 >/dev/null 2>&1 &
	echo $! >"$work/qemu.pid"
	wait "$(cat "$work/qemu.pid")" || true
}
if [ "$ACCEL" = auto ]; then
	ACCEL=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		# KVM boots or it does not: the guest reaches its init within 30 s, or
		# QEMU stops at once (an MSR it cannot set with -cpu host).
		rm -f "$work/out/status"
		echo "test-cgroup2: trying KVM"
		run_guest kvm "$TIMEOUT" &
		kvm=$!
		for _ in $(seq 30); do
			grep -q 'guest: kernel' "$work/console.log" 2>/dev/null && break
			kill -0 "$kvm" 2>/dev/null || break
			sleep 1
		done
		if grep -q 'guest: kernel' "$work/console.log" 2>/dev/null; then
			ACCEL=kvm
			wait "$kvm"
		else
			kill "$(cat "$work/qemu.pid")" 2>/dev/null || true
			wait "$kvm" 2>/dev/null || true
		fi
	fi
fi
if [ "$ACCEL" = tcg ]; then
	echo "test-cgroup2: *** KVM unavailable or it cannot boot this kernel: falling back to TCG emulation (slow) ***"
	rm -f "$work/out/"*
	run_guest tcg "$TIMEOUT"
fi

echo "test-cgroup2: guest console:"
grep '^guest: ' "$work/console.log" || true
rc=0
# failures LOG: each failed or skipped test of a go test -v log, with what
# it printed (lines cut at 300 characters), then the verdict.
failures() {
	awk '
		/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
		/^ *--- (FAIL|SKIP): / {
			print
			if ($3 in said) printf "%s", said[$3]
			next
		}
		/^ *--- PASS: / { next }
		/^    / && cur != "" { said[cur] = said[cur] substr($0, 1, 300) "\n"; next }
		/^(FAIL|PASS|ok)/ { print }
	' "$1"
}
for f in "$work"/out/*.log; do
	[ -f "$f" ] || continue
	echo "---- $(basename "$f" .log)"
	failures "$f"
done
echo "---- status (name exit seconds)"
if [ ! -f "$work/out/finished" ]; then
	echo "test-cgroup2: the guest did not finish; console tail:" >&2
	tail -40 "$work/console.log" >&2
	rc=1
fi
if [ -f "$work/out/status" ]; then
	cat "$work/out/status"
	awk '$2 != 0 { bad = 1 } END { exit bad }' "$work/out/status" || rc=1
else
	rc=1
fi
mkdir -p "$CACHE/last"
cp "$work/console.log" "$work"/out/* "$CACHE/last/" 2>/dev/null || true
echo "test-cgroup2: accelerator $ACCEL, $(($(date +%s) - started)) s; full logs in $CACHE/last"
exit "$rc"
