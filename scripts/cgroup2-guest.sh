#!/bin/sh
# The init of the cgroup v2 guest of scripts/test-cgroup2.sh, run from the
# 9p share mounted at /host: it mounts what the tests need, runs each
# suite of /host/suites and writes their logs and exit statuses to
# /host/out, then powers the guest off.
#
# /host/suites has one suite a line: NAME PACKAGE USER RUN SKIP, where
# USER is root, root-noci (without CI=true, so that the tests of
# toolchains the guest lacks skip) or rootless, and RUN and SKIP are -test.run and -test.skip
# patterns ("-" for none). /host/bin holds each package's test binary,
# named after its path with "/" made "_".
#
# A rootless suite runs as the unprivileged user tester (uid 1000) with
# CODERUNNER_TEST_ROOTLESS=1 and CODERUNNER_TEST_DELEGATED_CGROUP=1, alone at the root of a cgroup subtree given
# to it as systemd's Delegate=yes gives one: the user owns the directory,
# cgroup.procs, cgroup.subtree_control and cgroup.threads.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/root
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t devpts devpts /dev/pts 2>/dev/null
# Loopback up (SIOCSIFFLAGS, IFF_UP|IFF_LOOPBACK|IFF_RUNNING): minbase has no ip(8).
python3 -c 'import fcntl, socket, struct; fcntl.ioctl(socket.socket(), 0x8914, struct.pack("16sh", b"lo", 0x49))'
echo "guest: kernel $(uname -r); cgroup mounts:"
grep cgroup /proc/mounts
echo "guest: controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
# The subtrees below get the controllers, as systemd gives its slices.
echo "+memory +pids +cpu" >/sys/fs/cgroup/cgroup.subtree_control

# The Docker engine, for the suites that drive one (ENGINE_PACKAGES),
# and the image their containers run (coderunner/core:bookworm, tagged
# coderunner/javascript:bookworm too), made from this guest's own root:
# the files of IMAGE_PACKAGES and of all they depend on, as dpkg lists
# them. The engine's import is the cost (about 2.3 MB/s emulated: the
# whole root, 600 MB, took 260 s), so the image holds only what the
# suites run in containers (sh, coreutils, python3, node; no compiler),
# about 175 MB. The engine runs with the cgroupfs driver on cgroup v2
# (no systemd here), each container in /sys/fs/cgroup/docker/ID.
ENGINE_PACKAGES="sandbox/docker interp"
IMAGE_PACKAGES="dash coreutils grep sed util-linux mount python3 nodejs"

# closure PKG...: these packages and all they depend on, as installed.
closure() {
	todo="$*" seen=" "
	while [ -n "$todo" ]; do
		# shellcheck disable=SC2086 # the list is words
		set -- $todo
		p=$1
		shift
		todo="$*"
		case "$seen" in *" $p "*) continue ;; esac
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || continue
		seen="$seen$p "
		todo="$todo $(dpkg-query -W -f='${Pre-Depends},${Depends}' "$p" | tr ',|' '\n\n' | sed -e 's/(.*)//' -e 's/:any//' | tr -d ' ')"
	done
	echo "$seen"
}

# image_files PKG...: the image's members, relative to /, each once: the
# merged-/usr links, /etc but its shadow files, the packages' files at
# their merged-/usr paths (no documentation), Python's compiled modules.
image_files() {
	{
		printf '%s\n' bin lib lib64 sbin
		find etc ! -name 'shadow*' ! -name 'gshadow*'
		# shellcheck disable=SC2046 # the packages are words
		dpkg-query -L $(closure "$@") | sed -n -e 's#^/\(bin\|sbin\|lib\|lib64\)/#/usr/\1/#' \
			-e '/^\/\(etc\|tmp\|opt\|bin\|sbin\|lib\|lib64\)$/d' -e '/^\/etc\//d' \
			-e '/^\/usr\/share\/\(doc\|man\|info\|locale\)\//d' -e 's#^/##p'
		find usr/lib/python3* -name __pycache__ -o -path '*/__pycache__/*'
	} | awk '!seen[$0]++'
}

engine=
for p in $ENGINE_PACKAGES; do
	awk -v p="$p" '$1 !~ /^#/ && $2 == p { found = 1 } END { exit !found }' /host/suites && engine=1
done
if [ -n "$engine" ] && command -v dockerd >/dev/null; then
	t0=$(date +%s)
	# No bridge or iptables: every container of the backend has no network.
	dockerd --iptables=false --ip6tables=false --bridge=none >/host/out/dockerd.txt 2>&1 &
	for _ in $(seq 240); do
		docker info >/dev/null 2>&1 && break
		sleep 0.5
	done
	echo "guest: docker engine up in $(($(date +%s) - t0)) s: $(docker info --format 'cgroup v{{.CgroupVersion}}, {{.CgroupDriver}} driver, {{.Driver}}' 2>&1)"
	t0=$(date +%s)
	extra=$(mktemp -d)
	mkdir -p "$extra/workspace" "$extra/tmp" "$extra/opt"
	chmod 1777 "$extra/tmp"
	# shellcheck disable=SC2086 # the packages are words
	(cd / && image_files $IMAGE_PACKAGES) >"$extra.list"
	tar -C / --numeric-owner --no-recursion -c -T "$extra.list" -C "$extra" workspace tmp opt |
		docker import -c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			-c "WORKDIR /workspace" - coderunner/core:bookworm >/dev/null
	docker tag coderunner/core:bookworm coderunner/javascript:bookworm
	rm -rf "$extra" "$extra.list"
	echo "guest: image from the guest's root in $(($(date +%s) - t0)) s: $(docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | tr '\n' ' ')"
fi

# Emulated, a toolchain runs many times slower: a program that must reach
# a point before its time limit passes gets this many times its limit.
TIME_SCALE=5

uid=1000
grep -q '^tester:' /etc/passwd || {
	echo "tester:x:$uid:$uid::/tmp/tester:/bin/sh" >>/etc/passwd
	echo "tester:x:$uid:" >>/etc/group
}
mkdir -p /tmp/tester /opt/tests
chown "$uid:$uid" /tmp/tester
for b in /host/bin/*.test; do
	cp "$b" /opt/tests/
done
chmod 755 /opt/tests /opt/tests/*

# run NAME PACKAGE USER RUN SKIP
run() {
	name=$1 pkg=$2 user=$3 match=$4 skip=$5
	[ "$match" = - ] && match=.
	[ "$skip" = - ] && skip='^$'
	bin=/opt/tests/$(echo "$pkg" | tr / _).test
	# Like go test: the working directory is the package's directory.
	dir=/tmp/src-$name/$pkg
	mkdir -p "$dir"
	echo "guest: === $name ($user)"
	t0=$(date +%s)
	if [ "$user" = rootless ]; then
		cg=/sys/fs/cgroup/rootless-$name
		mkdir "$cg"
		chown "$uid:$uid" "$cg" "$cg/cgroup.procs" "$cg/cgroup.subtree_control" "$cg/cgroup.threads"
		chown -R "$uid:$uid" "/tmp/src-$name"
		# A shell of its own moves itself ($$ of a subshell would be
		# this shell's) into the subtree, then becomes the tests.
		sh -c 'cd "$1" && echo $$ >"$2/cgroup.procs" && shift 2 && exec "$@"' sh "$dir" "$cg" \
			setpriv --reuid="$uid" --regid="$uid" --clear-groups \
			env -i PATH="$PATH" HOME=/tmp/tester TMPDIR=/tmp CI=true CODERUNNER_TEST_ROOTLESS=1 CODERUNNER_TEST_DELEGATED_CGROUP=1 CODERUNNER_TEST_CGROUP2=1 CODERUNNER_TEST_TIME_SCALE=$TIME_SCALE \
			"$bin" -test.v -test.count=1 -test.timeout=40m -test.run "$match" -test.skip "$skip" \
			</dev/null >"/host/out/$name.log" 2>&1
	else
		ci=true
		# Outside CI a missing toolchain skips: the guest has only some.
		[ "$user" = root-noci ] && ci=
		(
			cd "$dir" || exit 1
			exec env CI=$ci CODERUNNER_TEST_CGROUP2=1 CODERUNNER_TEST_TIME_SCALE=$TIME_SCALE \
				"$bin" -test.v -test.count=1 -test.timeout=40m -test.run "$match" -test.skip "$skip"
		) </dev/null >"/host/out/$name.log" 2>&1
	fi
	echo "$name $? $(($(date +%s) - t0))" >>/host/out/status
}

while read -r name pkg user match skip; do
	case "$name" in '' | '#'*) continue ;; esac
	run "$name" "$pkg" "$user" "$match" "$skip"
done </host/suites

echo done >/host/out/finished
sync
umount /host
echo o >/proc/sysrq-trigger
sleep 30
