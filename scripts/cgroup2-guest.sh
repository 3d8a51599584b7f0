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
			env -i PATH="$PATH" HOME=/tmp/tester TMPDIR=/tmp CI=true CODERUNNER_TEST_ROOTLESS=1 CODERUNNER_TEST_DELEGATED_CGROUP=1 CODERUNNER_TEST_CGROUP2=1 \
			"$bin" -test.v -test.count=1 -test.timeout=40m -test.run "$match" -test.skip "$skip" \
			</dev/null >"/host/out/$name.log" 2>&1
	else
		ci=true
		# Outside CI a missing toolchain skips: the guest has only some.
		[ "$user" = root-noci ] && ci=
		(
			cd "$dir" || exit 1
			exec env CI=$ci CODERUNNER_TEST_CGROUP2=1 \
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
