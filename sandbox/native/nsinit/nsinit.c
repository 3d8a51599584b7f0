// The sandbox init. The native backend starts this binary again, inside fresh
// user, PID, mount, network, IPC, UTS and cgroup namespaces, with argv[0] set
// to NSINIT_ARGV0. This constructor runs before the Go runtime starts (as
// runc's nsexec does): the Go runtime cannot be trusted to do mount work,
// fork and exec from a multi-threaded process, and starting it would cost
// more than the whole sandbox setup.
//
// As PID 1 of the new PID namespace it builds the root filesystem, then
// starts each run in PID, IPC and mount namespaces of the run's own, where
// the user program drops every privilege and execs. It reports the
// program's wait status on fd 4 once nothing of the run is left, and
// exits, or, in a kept sandbox, waits for the next run.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsinit.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
struct mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_NOEXEC
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef SYS_pivot_root
#define SYS_pivot_root __NR_pivot_root
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE (1 << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)
#endif

struct arg {
	const char *s;
	uint32_t len;
};

struct op {
	uint32_t code;
	uint32_t argc;
	struct arg *argv;
};

struct source {
	const char *path;
	int fd;
};

#define MAX_SOURCES 256
#define MAX_SCRATCH 4
#define OLD_ROOT "/.oldroot"

struct config {
	struct op *ops;
	size_t nops;
	// root is where the new root is built: the staging mount point during
	// the first phase, "" once the init has pivoted into it.
	char root[PATH_MAX];
	// host is a private, detached copy of the host's mount tree: bind
	// sources are cloned out of it, so the tree the init pivoted away from
	// can be detached in the first phase, before the run is known. It is
	// -1 where the kernel cannot clone out of a detached tree (before
	// Linux 6.15); then old is where the host's tree is reachable: "" before
	// the pivot, OLD_ROOT after it until the second phase detaches it.
	int host;
	const char *old;
	struct source sources[MAX_SOURCES];
	int nsources;
	// later is set once the first run is over: a sealed sandbox allows
	// only the operations of nsinit.h's later runs. frame is the
	// current run's second phase, released when the next run arrives.
	int later;
	char *frame;
	// proc is where the sandbox's /proc is (in the first phase's frame,
	// which is never released), or NULL without one.
	const char *proc;
	// attach is the detached mount that came with the second phase (the
	// run's host workspace, cloned by the backend), until OP_ATTACH
	// attaches it; -1 without one.
	int attach;
	// given are the bind sources that came with the first phase, in the
	// order of its OP_GIVEN operations, until open_sources takes them.
	int given[NSINIT_MAX_GIVEN];
	int ngiven;
};

static int status_fd = NSINIT_STATUS_FD;


// fail reports a setup failure to the parent and exits. The message is one
// line: "E <stage>: <detail>: <strerror>".
static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	char msg[1024];
	int saved = errno;
	int n = snprintf(msg, sizeof msg, "E ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof msg - n, fmt, ap);
	va_end(ap);
	if (n < (int)sizeof msg - 2 && saved != 0)
		n += snprintf(msg + n, sizeof msg - n, ": %s", strerror(saved));
	if (n > (int)sizeof msg - 2)
		n = sizeof msg - 2;
	msg[n++] = '\n';
	ssize_t unused = write(status_fd, msg, n);
	(void)unused;
	_exit(125);
}

// read_full reads exactly n bytes.
static void read_full(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail("config: read");
		}
		if (r == 0) {
			errno = 0;
			fail("config: truncated frame");
		}
		got += (size_t)r;
	}
}

// read_body reads the len bytes of operations of a frame whose length
// was read.
static char *read_body(int fd, uint32_t len, size_t *size)
{
	if (len > NSINIT_MAX_CONFIG) {
		errno = 0;
		fail("config: frame of %u bytes, more than %u", len, NSINIT_MAX_CONFIG);
	}
	char *buf = malloc(len + 1);
	if (!buf)
		fail("config: out of memory");
	read_full(fd, buf, len);
	*size = len;
	return buf;
}

static uint32_t take_u32(const char *buf, size_t size, size_t *off)
{
	uint32_t v;
	if (size - *off < sizeof v) {
		errno = 0;
		fail("config: truncated");
	}
	memcpy(&v, buf + *off, sizeof v);
	*off += sizeof v;
	return v;
}

static void parse(char *buf, size_t size, struct config *c)
{
	size_t off = 0, cap = 64;
	c->nops = 0;
	c->ops = calloc(cap, sizeof *c->ops);
	if (!c->ops)
		fail("config: out of memory");
	while (off < size) {
		if (c->nops == cap) {
			cap *= 2;
			c->ops = realloc(c->ops, cap * sizeof *c->ops);
			if (!c->ops)
				fail("config: out of memory");
		}
		struct op *o = &c->ops[c->nops++];
		o->code = take_u32(buf, size, &off);
		o->argc = take_u32(buf, size, &off);
		if (o->argc > 1u << 16) {
			errno = 0;
			fail("config: op %u has %u arguments", o->code, o->argc);
		}
		o->argv = calloc(o->argc + 1, sizeof *o->argv);
		if (!o->argv)
			fail("config: out of memory");
		for (uint32_t i = 0; i < o->argc; i++) {
			uint32_t len = take_u32(buf, size, &off);
			if (size - off < (size_t)len + 1 || buf[off + len] != '\0') {
				errno = 0;
				fail("config: malformed argument of op %u", o->code);
			}
			o->argv[i].s = buf + off;
			o->argv[i].len = len;
			off += (size_t)len + 1;
		}
	}
}

static void want_args(const struct op *o, uint32_t n)
{
	if (o->argc != n) {
		errno = 0;
		fail("config: op %u wants %u arguments, has %u", o->code, n, o->argc);
	}
}

static long long number(const struct arg *a, int base)
{
	char *end;
	errno = 0;
	long long v = strtoll(a->s, &end, base);
	if (errno != 0 || *end != '\0' || end == a->s)
		fail("config: bad number %.32s", a->s);
	return v;
}

// join writes a followed by b into out, failing rather than truncating.
static void join(char *out, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la + lb >= PATH_MAX) {
		errno = ENAMETOOLONG;
		fail("path %.256s%.256s", a, b);
	}
	memcpy(out, a, la);
	memcpy(out + la, b, lb + 1);
}

// in_root joins a sandbox path to the staging root.
static void in_root(const struct config *c, const char *path, char *out)
{
	if (path[0] != '/') {
		errno = 0;
		fail("config: path %.256s is not absolute", path);
	}
	if (snprintf(out, PATH_MAX, "%s%s", c->root, path) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		fail("config: path %.256s", path);
	}
}

// mkdir_all creates every missing directory of an absolute host path under
// the staging root. The root is a tmpfs only this process has written to, and
// every bind mount is made read-only the moment it is made, so a path under a
// host mount can never be created on the host.
static void mkdir_all(const char *root, char *path, mode_t mode)
{
	size_t skip = strlen(root);
	for (char *p = path + skip + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			fail("mkdir %.256s", path + skip);
		*p = '/';
	}
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		fail("mkdir %.256s", path + skip);
}

static void make_parent(const char *root, const char *path)
{
	char parent[PATH_MAX];
	strcpy(parent, path);
	char *slash = strrchr(parent, '/');
	if (slash && slash > parent + strlen(root)) {
		*slash = '\0';
		mkdir_all(root, parent, 0755);
	}
}

// set_attrs applies MOUNT_ATTR_* flags to the mounts at and below path.
static void set_attrs(const char *path, const char *label, uint64_t attrs)
{
	struct mount_attr attr = {0};
	attr.attr_set = attrs;
	if (syscall(SYS_mount_setattr, -1, path, AT_RECURSIVE, &attr, sizeof attr) == 0)
		return;
	// Before Linux 5.12 only the top mount can be remounted.
	unsigned long flags = MS_BIND | MS_REMOUNT;
	if (attrs & MOUNT_ATTR_RDONLY)
		flags |= MS_RDONLY;
	if (attrs & MOUNT_ATTR_NOSUID)
		flags |= MS_NOSUID;
	if (attrs & MOUNT_ATTR_NODEV)
		flags |= MS_NODEV;
	if (attrs & MOUNT_ATTR_NOEXEC)
		flags |= MS_NOEXEC;
	if (mount(NULL, path, NULL, flags, NULL) < 0)
		fail("remount %.256s", label);
}

// host_open opens a path of the host's tree as the host sees it: inside the
// detached copy, where even an absolute symbolic link resolves within the
// copy, or through the old root.
static int host_open(const struct config *c, const char *path)
{
	if (c->host >= 0) {
		struct open_how how = {0};
		how.flags = O_PATH | O_CLOEXEC;
		how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
		return (int)syscall(SYS_openat2, c->host, path, &how, sizeof how);
	}
	char p[PATH_MAX];
	join(p, c->old, path);
	return open(p, O_PATH | O_CLOEXEC);
}

// source_fd finds the descriptor opened for a bind source in the first
// phase, or opens it now.
static int source_fd(const struct config *c, const char *path, int *own)
{
	for (int i = 0; i < c->nsources; i++) {
		if (strcmp(c->sources[i].path, path) == 0) {
			*own = 0;
			return c->sources[i].fd;
		}
	}
	int fd = host_open(c, path);
	if (fd < 0)
		fail("open bind source %.256s", path);
	*own = 1;
	return fd;
}

// bind_fd mounts what fd refers to, with everything mounted below it, on
// dst, with the attributes attrs. From the detached copy of the host's tree
// it is a clone, set up before it is attached, so that it is never
// writable inside the sandbox for a moment.
static void bind_fd(const struct config *c, int fd, const char *dst, const char *label, uint64_t attrs)
{
	if (c->host >= 0) {
		int t = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		if (t < 0)
			fail("clone %.256s", label);
		struct mount_attr attr = {0};
		attr.attr_set = attrs;
		if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
			fail("set attributes of %.256s", label);
		if (syscall(SYS_move_mount, t, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			fail("attach %.256s", label);
		close(t);
		return;
	}
	char src[64];
	snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		fail("bind %.256s", label);
	set_attrs(dst, label, attrs);
}

static void op_bind(const struct config *c, const struct op *o)
{
	want_args(o, 3);
	char dst[PATH_MAX];
	struct stat st;
	int writable = strcmp(o->argv[2].s, "rw") == 0, own;
	int fd = source_fd(c, o->argv[0].s, &own);
	in_root(c, o->argv[1].s, dst);
	if (fstat(fd, &st) < 0)
		fail("bind %.256s", o->argv[0].s);
	make_parent(c->root, dst);
	if (S_ISDIR(st.st_mode)) {
		mkdir_all(c->root, dst, 0755);
	} else {
		int t = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (t < 0)
			fail("bind target %.256s", o->argv[1].s);
		close(t);
	}
	bind_fd(c, fd, dst, o->argv[1].s, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (writable ? 0 : MOUNT_ATTR_RDONLY));
	if (own)
		close(fd);
}

// op_attach attaches the detached mount the backend sent with the second
// phase (a clone of the run's host workspace, made private, nosuid and
// nodev by the backend before it was sent) on dst, over what the first
// phase mounted there. Unlike a bind source, it need not be in the
// init's copy of the host's tree: a sandbox started ahead of need serves
// a workspace mounted after it started.
static void op_attach(struct config *c, const struct op *o)
{
	want_args(o, 1);
	char dst[PATH_MAX];
	if (c->attach < 0) {
		errno = 0;
		fail("config: no mount sent for %.256s", o->argv[0].s);
	}
	in_root(c, o->argv[0].s, dst);
	mkdir_all(c->root, dst, 0755);
	if (syscall(SYS_move_mount, c->attach, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		fail("attach workspace %.256s", o->argv[0].s);
	close(c->attach);
	c->attach = -1;
}

static void op_file(const struct config *c, const struct op *o)
{
	want_args(o, 5);
	char path[PATH_MAX];
	in_root(c, o->argv[0].s, path);
	make_parent(c->root, path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("create %.256s", o->argv[0].s);
	const char *p = o->argv[1].s;
	size_t left = o->argv[1].len;
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("write %.256s", o->argv[0].s);
		}
		p += n;
		left -= n;
	}
	if (fchown(fd, (uid_t)number(&o->argv[3], 10), (gid_t)number(&o->argv[4], 10)) < 0)
		fail("chown %.256s", o->argv[0].s);
	if (fchmod(fd, (mode_t)number(&o->argv[2], 8)) < 0)
		fail("chmod %.256s", o->argv[0].s);
	close(fd);
}

static void op_dev(const struct config *c, const struct op *o)
{
	want_args(o, 1);
	char dst[PATH_MAX];
	if (strchr(o->argv[0].s, '/') != NULL || o->argv[0].len > 32) {
		errno = 0;
		fail("config: bad device name");
	}
	char dev[64];
	join(dev, "/dev/", o->argv[0].s);
	in_root(c, dev, dst);
	int fd = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		fail("create %.64s", dev);
	close(fd);
	int src = host_open(c, dev);
	if (src < 0)
		fail("open %.64s", dev);
	bind_fd(c, src, dst, dev, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	close(src);
}

// mount_proc mounts a proc filesystem on dst for the caller's PID
// namespace.
static void mount_proc(const char *dst)
{
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	// subset=pid hides everything in /proc but the processes themselves:
	// no /proc/sys, /proc/kcore, /proc/sysrq-trigger, /proc/kallsyms.
	if (mount("proc", dst, "proc", flags, "subset=pid") == 0)
		return;
	if (mount("proc", dst, "proc", flags, NULL) < 0)
		fail("mount proc");
	// Older kernels: at least keep /proc/sys and the kernel's trigger files
	// out of reach.
	char sys[PATH_MAX];
	join(sys, dst, "/sys");
	if (mount(sys, sys, NULL, MS_BIND | MS_REC, NULL) < 0)
		fail("bind /proc/sys");
	set_attrs(sys, "/proc/sys", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	const char *masked[] = {"kcore", "sysrq-trigger", "kallsyms", "keys", "timer_list", NULL};
	for (int i = 0; masked[i]; i++) {
		char p[PATH_MAX], name[64];
		join(name, "/", masked[i]);
		join(p, dst, name);
		if (access(p, F_OK) == 0 && mount("/dev/null", p, NULL, MS_BIND, NULL) < 0)
			fail("mask /proc/%s", masked[i]);
	}
}

// op_proc mounts the init's /proc, and records where it is: each run
// mounts its own there, for its own PID namespace.
static void op_proc(struct config *c, const struct op *o)
{
	want_args(o, 1);
	char dst[PATH_MAX];
	in_root(c, o->argv[0].s, dst);
	mkdir_all(c->root, dst, 0555);
	mount_proc(dst);
	c->proc = o->argv[0].s;
}

// op_userns_max sets one of the user namespace's limits (user.max_*),
// which bound what is charged to this namespace and those below it: the
// counts are charged to the host user that created it too. It runs
// before the pivot, through the host's /proc, whose /proc/sys/user is
// the caller's user namespace's. A kernel without the entry is skipped.
static void op_userns_max(const struct op *o)
{
	want_args(o, 2);
	const char *name = o->argv[0].s;
	if (strncmp(name, "max_", 4) != 0 || strchr(name, '/') != NULL || o->argv[0].len > 64) {
		errno = 0;
		fail("config: bad user namespace limit %.64s", name);
	}
	number(&o->argv[1], 10);
	char path[128];
	snprintf(path, sizeof path, "/proc/sys/user/%s", name);
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		fail("open %s", path);
	}
	if (write(fd, o->argv[1].s, o->argv[1].len) != (ssize_t)o->argv[1].len)
		fail("write %s", path);
	close(fd);
}

static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		fail("loopback socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		fail("loopback flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		fail("loopback up");
	close(s);
}

static void detach_old_root(struct config *c)
{
	if (umount2(OLD_ROOT, MNT_DETACH) < 0)
		fail("detach old root");
	if (rmdir(OLD_ROOT) < 0)
		fail("rmdir %s", OLD_ROOT);
	c->old = NULL;
}

// pivot makes the new root the init's root at the end of the first phase.
// The host's tree stays reachable at OLD_ROOT until the second phase has
// bound what the run needs from it.
static void pivot(struct config *c)
{
	char old[PATH_MAX];
	join(old, c->root, OLD_ROOT);
	if (mkdir(old, 0700) < 0)
		fail("mkdir %s", OLD_ROOT);
	if (chdir(c->root) < 0)
		fail("chdir root");
	if (syscall(SYS_pivot_root, ".", "." OLD_ROOT) < 0)
		fail("pivot_root");
	if (chdir("/") < 0)
		fail("chdir /");
	c->root[0] = '\0';
	c->old = OLD_ROOT;
	// With a detached copy to clone sources from, the host's tree can go
	// now, while the sandbox waits for its run: detaching a tree waits for
	// the kernel (an RCU grace period), which a run should not.
	if (c->host >= 0)
		detach_old_root(c);
}

// seal makes the root read-only once the second phase is done, with the
// host's tree gone. The detached copy stays open in the init, out of the
// program's reach (the descriptor is closed on exec, and the init is not
// dumpable), until the init exits: releasing it waits for the kernel too.
static void seal(struct config *c)
{
	for (int i = 0; i < c->nsources; i++)
		close(c->sources[i].fd);
	c->nsources = 0;
	if (c->old)
		detach_old_root(c);
	if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		fail("remount / read-only");
}

// report writes one line to the parent.
static void report(const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof msg - 1)
		n = sizeof msg - 1;
	ssize_t unused = write(status_fd, msg, n);
	(void)unused;
}

struct exec_plan {
	const struct op *user, *cwd, *seccomp, *argv, *env;
	int stdin_null;
	// null is /dev/null opened read-only in the first phase, for a
	// program whose stdin it is.
	int null;
	// argv and envp are built by the init, so that the program's process,
	// which may share the init's memory until it execs, allocates nothing.
	char **argvp, **envp;
	const struct op *rlimits[32];
	int nrlimits;
	// keep, when set, is the OP_KEEP of the run: the sandbox serves
	// another run after this one. scratch is what each of its mounts
	// looked like before the program ran.
	const struct op *keep;
	struct stat scratch[MAX_SCRATCH];
};

// child_fail sends the reason the program could not start to the init over
// the close-on-exec pipe.
static void __attribute__((noreturn)) child_fail(int fd, const char *what)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
	ssize_t unused = write(fd, msg, n > (int)sizeof msg ? (int)sizeof msg : n);
	(void)unused;
	_exit(127);
}

// lock_capabilities runs in the init at the end of the first phase, so
// that the program's process inherits the result instead of paying for it
// on the way to exec. The bounding and ambient sets only matter at exec,
// which the init never does again; its own capabilities are untouched.
static void lock_capabilities(void)
{
	// Lock the capability rules so that uid 0 in the namespace (when the
	// backend runs unprivileged and can map only one uid) gains nothing
	// from exec.
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
					     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		fail("securebits");
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; // past the last capability this kernel knows
			fail("drop bounding capability %d", cap);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail("clear ambient capabilities");
}

static void clear_capabilities(int errfd)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		child_fail(errfd, "clear capabilities");
}

// exec_program runs in the program's process. It makes itself ready, then,
// unless go is -1, waits on go until the init has sealed the root (done in
// parallel, since detaching the host's tree waits for the kernel), and
// execs.
static void __attribute__((noreturn)) exec_program(const struct exec_plan *p, int errfd, int go)
{
	if (setsid() < 0)
		child_fail(errfd, "setsid");
	if (p->stdin_null && dup2(p->null, 0) < 0)
		child_fail(errfd, "stdin from /dev/null");
	// Nothing but stdin, stdout, stderr and the error pipe survives exec.
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(errfd, "close_range");
	for (int i = 0; i < p->nrlimits; i++) {
		const struct op *o = p->rlimits[i];
		struct rlimit rl = {(rlim_t)number(&o->argv[1], 10), (rlim_t)number(&o->argv[2], 10)};
		if (setrlimit((int)number(&o->argv[0], 10), &rl) < 0)
			child_fail(errfd, "setrlimit");
	}
	uid_t uid = (uid_t)number(&p->user->argv[0], 10);
	gid_t gid = (gid_t)number(&p->user->argv[1], 10);
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		child_fail(errfd, "setgroups");
	if (setresgid(gid, gid, gid) < 0)
		child_fail(errfd, "setresgid");
	if (setresuid(uid, uid, uid) < 0)
		child_fail(errfd, "setresuid");
	clear_capabilities(errfd);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(errfd, "no_new_privs");
	if (chdir(p->cwd->argv[0].s) < 0)
		child_fail(errfd, "chdir");

	if (go >= 0) {
		char ready;
		ssize_t got;
		do {
			got = read(go, &ready, 1);
		} while (got < 0 && errno == EINTR);
		if (got != 1) {
			errno = EPIPE;
			child_fail(errfd, "wait for the sealed root");
		}
		close(go);
	}

	// The filter goes last: from here on only execve is needed.
	struct sock_fprog prog = {
		.len = (unsigned short)(p->seccomp->argv[0].len / sizeof(struct sock_filter)),
		.filter = (struct sock_filter *)p->seccomp->argv[0].s,
	};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		child_fail(errfd, "seccomp");
	execve(p->argvp[0], p->argvp, p->envp);
	child_fail(errfd, "exec");
}

struct child_args {
	const struct exec_plan *plan;
	int errfd;
};

// child_stack is the stack of the program's process while it shares the
// init's memory; the init is suspended meanwhile.
static char child_stack[64 << 10] __attribute__((aligned(16)));

static int child_main(void *p)
{
	const struct child_args *a = p;
	exec_program(a->plan, a->errfd, -1);
}

// preopen opens a bind source for later. A source named only as one a
// later run may need (OP_PREOPEN) may have gone since: it is skipped, and
// a run that does need it finds out when it binds it.
static void preopen(struct config *c, const char *path, int optional)
{
	for (int i = 0; i < c->nsources; i++)
		if (strcmp(c->sources[i].path, path) == 0)
			return;
	if (c->nsources == MAX_SOURCES) {
		errno = 0;
		fail("more than %d bind sources", MAX_SOURCES);
	}
	int fd = host_open(c, path);
	if (fd < 0) {
		if (optional)
			return;
		fail("open bind source %.256s", path);
	}
	c->sources[c->nsources].path = path;
	c->sources[c->nsources].fd = fd;
	c->nsources++;
}

// detached_host_tree copies the host's mount tree, as this namespace has
// it, into a detached tree, or returns -1 where the kernel cannot clone
// mounts out of such a tree (before Linux 6.15). The test clones only the
// empty directory the new root will be mounted on, which nothing is
// mounted below: a small clone, quick to drop.
static int detached_host_tree(const char *root)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		return -1;
	struct open_how how = {0};
	how.flags = O_PATH | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	int dir = (int)syscall(SYS_openat2, fd, root, &how, sizeof how);
	int probe = dir < 0 ? -1 : (int)syscall(SYS_open_tree, dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (dir >= 0)
		close(dir);
	if (probe < 0) {
		close(fd);
		return -1;
	}
	close(probe);
	return fd;
}

// root_path is the path the first phase mounts the new root on.
static const char *root_path(const struct config *c)
{
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		if (o->code == OP_ROOT && o->argc >= 1)
			return o->argv[0].s;
	}
	errno = 0;
	fail("config: the first phase has no root");
}

// keep_host_attached reports whether the first phase asks for the host's
// tree to stay attached until the second phase is done, as kernels before
// Linux 6.15 need (the backend's tests ask for it to cover that path).
static int keep_host_attached(const struct config *c)
{
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		if (o->code == OP_ROOT && o->argc >= 2 && strcmp(o->argv[1].s, "attached") == 0)
			return 1;
	}
	return 0;
}

// take_given records the bind sources the backend opened for the init
// (OP_GIVEN), which the init's own host user may not reach: a toolchain
// below root's 0700 home. Each descriptor is a path in this namespace's
// copy of the host's tree; with a detached copy (c->host) it is cloned
// into a detached tree of its own, since the tree it points into is
// detached at the pivot.
static void take_given(struct config *c)
{
	int next = 0;
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		if (o->code != OP_GIVEN)
			continue;
		want_args(o, 1);
		if (next == c->ngiven) {
			errno = 0;
			fail("config: more given sources than descriptors");
		}
		if (c->nsources == MAX_SOURCES) {
			errno = 0;
			fail("more than %d bind sources", MAX_SOURCES);
		}
		int fd = c->given[next++];
		if (c->host >= 0) {
			int t = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
			if (t < 0)
				fail("clone given source %.256s", o->argv[0].s);
			close(fd);
			fd = t;
		}
		c->sources[c->nsources].path = o->argv[0].s;
		c->sources[c->nsources].fd = fd;
		c->nsources++;
	}
	for (; next < c->ngiven; next++)
		close(c->given[next]);
	c->ngiven = 0;
}

// open_sources opens the first phase's bind sources, and those it was told
// later runs may need, as the host user the init was started as: as root
// the backend starts it as a host uid of its own (the owner of the
// sandbox's user namespace, so that the kernel charges that user and not
// root for what the sandbox holds), and opens for it the sources that uid
// may not reach. Then the init takes the identity of root inside the
// namespace, an unprivileged host uid, for everything that follows.
static void open_sources(struct config *c)
{
	// Nothing done in this namespace may reach the host's mounts, and the
	// copy below must be private too.
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make mounts private");
	c->host = -1;
	if (!keep_host_attached(c))
		c->host = detached_host_tree(root_path(c));
	take_given(c);
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		if (o->code == OP_BIND || o->code == OP_PREOPEN) {
			if (o->argc < 1)
				fail("config: op %u without a source", o->code);
			preopen(c, o->argv[0].s, o->code == OP_PREOPEN);
		}
	}
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		fail("setgroups");
	if (setresgid(0, 0, 0) < 0)
		fail("setresgid");
	if (setresuid(0, 0, 0) < 0)
		fail("setresuid");
	// Changing credentials cleared the parent-death signal: without it the
	// program would outlive a backend process that died.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		fail("parent-death signal");
}

// allowed_later reports whether a later run, in a sealed sandbox, may
// ask for op: the program's own settings and its files in the scratch
// mounts, which are the only writable places left.
static int allowed_later(uint32_t op)
{
	switch (op) {
	case OP_MKDIR:
	case OP_FILE:
	case OP_REMOUNT:
	case OP_RLIMIT:
	case OP_USER:
	case OP_CWD:
	case OP_ARGV:
	case OP_ENV:
	case OP_STDIN_NULL:
	case OP_KEEP:
		return 1;
	}
	return 0;
}

// keep records that the sandbox serves another run after this one, and
// what its scratch mounts look like while the program has not yet run.
static void keep(const struct config *c, struct exec_plan *plan, const struct op *o)
{
	if (o->argc % 2 != 0 || o->argc / 2 > MAX_SCRATCH) {
		errno = 0;
		fail("config: op %u with %u arguments", o->code, o->argc);
	}
	for (uint32_t i = 0; i < o->argc; i += 2) {
		char path[PATH_MAX];
		in_root(c, o->argv[i].s, path);
		if (lstat(path, &plan->scratch[i / 2]) < 0 || !S_ISDIR(plan->scratch[i / 2].st_mode))
			fail("scratch mount %.256s", o->argv[i].s);
	}
	plan->keep = o;
}

// apply carries out the operations of one phase. The program's own
// settings are only recorded in plan; they take effect in its process.
static void apply(struct config *c, struct exec_plan *plan)
{
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		char path[PATH_MAX];
		if (c->later && !allowed_later(o->code)) {
			errno = 0;
			fail("config: op %u in a later run", o->code);
		}
		switch (o->code) {
		case OP_CGROUPNS:
			if (unshare(CLONE_NEWCGROUP) < 0)
				fail("unshare cgroup namespace");
			break;
		case OP_PREOPEN:
		case OP_GIVEN:
			break;
		case OP_ROOT:
			if (o->argc < 1 || o->argc > 2) {
				errno = 0;
				fail("config: op %u with %u arguments", o->code, o->argc);
			}
			if (!c->old || c->old[0]) {
				errno = 0;
				fail("config: root after pivot");
			}
			if (snprintf(c->root, sizeof c->root, "%s", o->argv[0].s) >= (int)sizeof c->root)
				fail("root path too long");
			if (mount("tmpfs", c->root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=0755") < 0)
				fail("mount root tmpfs at %.256s", c->root);
			break;
		case OP_MKDIR:
			want_args(o, 4);
			in_root(c, o->argv[0].s, path);
			mkdir_all(c->root, path, (mode_t)number(&o->argv[1], 8));
			if (chown(path, (uid_t)number(&o->argv[2], 10), (gid_t)number(&o->argv[3], 10)) < 0)
				fail("chown %.256s", o->argv[0].s);
			if (chmod(path, (mode_t)number(&o->argv[1], 8)) < 0)
				fail("chmod %.256s", o->argv[0].s);
			break;
		case OP_BIND:
			op_bind(c, o);
			break;
		case OP_ATTACH:
			op_attach(c, o);
			break;
		case OP_SYMLINK:
			want_args(o, 2);
			in_root(c, o->argv[1].s, path);
			make_parent(c->root, path);
			if (symlink(o->argv[0].s, path) < 0)
				fail("symlink %.256s", o->argv[1].s);
			break;
		case OP_TMPFS:
			want_args(o, 2);
			in_root(c, o->argv[0].s, path);
			mkdir_all(c->root, path, 0755);
			if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, o->argv[1].s) < 0)
				fail("mount tmpfs on %.256s", o->argv[0].s);
			break;
		case OP_REMOUNT:
			want_args(o, 2);
			in_root(c, o->argv[0].s, path);
			if (mount(NULL, path, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, o->argv[1].s) < 0)
				fail("remount %.256s", o->argv[0].s);
			break;
		case OP_FILE:
			op_file(c, o);
			break;
		case OP_DEV:
			op_dev(c, o);
			break;
		case OP_PROC:
			op_proc(c, o);
			break;
		case OP_HOSTNAME:
			want_args(o, 1);
			if (sethostname(o->argv[0].s, o->argv[0].len) < 0)
				fail("sethostname");
			break;
		case OP_LOOPBACK:
			loopback_up();
			break;
		case OP_USERNS_MAX:
			if (!c->old || c->old[0]) {
				errno = 0;
				fail("config: user namespace limit after pivot");
			}
			op_userns_max(o);
			break;
		case OP_RLIMIT:
			want_args(o, 3);
			if (plan->nrlimits == (int)(sizeof plan->rlimits / sizeof plan->rlimits[0]))
				fail("too many rlimits");
			plan->rlimits[plan->nrlimits++] = o;
			break;
		case OP_USER:
			want_args(o, 2);
			plan->user = o;
			break;
		case OP_CWD:
			want_args(o, 1);
			plan->cwd = o;
			break;
		case OP_SECCOMP:
			want_args(o, 1);
			if (o->argv[0].len == 0 || o->argv[0].len % sizeof(struct sock_filter) != 0 ||
			    o->argv[0].len / sizeof(struct sock_filter) > BPF_MAXINSNS)
				fail("bad seccomp program");
			plan->seccomp = o;
			break;
		case OP_ARGV:
			if (o->argc == 0)
				fail("empty argv");
			plan->argv = o;
			break;
		case OP_ENV:
			plan->env = o;
			break;
		case OP_STDIN_NULL:
			plan->stdin_null = 1;
			break;
		case OP_KEEP:
			keep(c, plan, o);
			break;
		default:
			errno = 0;
			fail("config: unknown op %u", o->code);
		}
	}
}

// finish_plan checks that a run's second phase said everything the
// program needs, and builds its argv and environment.
static void finish_plan(struct exec_plan *plan)
{
	if (!plan->user || !plan->cwd || !plan->seccomp || !plan->argv || !plan->env) {
		errno = 0;
		fail("config: incomplete");
	}
	plan->argvp = calloc(plan->argv->argc + 1, sizeof *plan->argvp);
	plan->envp = calloc(plan->env->argc + 1, sizeof *plan->envp);
	if (!plan->argvp || !plan->envp)
		fail("allocate argv");
	for (uint32_t i = 0; i < plan->argv->argc; i++)
		plan->argvp[i] = (char *)plan->argv->argv[i].s;
	for (uint32_t i = 0; i < plan->env->argc; i++)
		plan->envp[i] = (char *)plan->env->argv[i].s;
}

// await_exec gives the init's standard streams up, since the program has
// its own copies and the pipes must not stay open after it is gone, then
// waits for the program's process to exec: the error pipe closes, or
// brings the reason it could not.
static void await_exec(int errfd)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		close(devnull);
	}
	char why[512];
	ssize_t n;
	do {
		n = read(errfd, why, sizeof why - 1);
	} while (n < 0 && errno == EINTR);
	close(errfd);
	if (n > 0) {
		why[n] = '\0';
		report("E start program: %s\n", why);
		_exit(125);
	}
}

// wait_program reaps orphans until the program's process ends, and
// returns its wait status.
static int wait_program(pid_t child)
{
	for (;;) {
		int ws;
		pid_t pid = waitpid(-1, &ws, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			fail("wait");
		}
		if (pid == child)
			return ws;
	}
}

// Each run has a PID, IPC and mount namespace of its own, nested in the
// sandbox's: a first process (the run's init, PID 1 there) is cloned
// into them, mounts a /proc for the new PID namespace, and starts the
// program as its only child (PID 2, as in a sandbox of its own, so that
// signals reach it as they would anywhere: a namespace's PID 1 ignores
// the ones it has no handler for). When the program ends, the run's init
// writes its wait status on a pipe and exits, and the kernel kills and
// reaps everything left in its PID namespace before the sandbox's init
// can reap it. So nothing of a run, not even a PID counter, an IPC
// object or a process, is there for the next run of a kept sandbox, and
// the first run's IPC objects are not the sandbox init's either.

struct run_args {
	const struct config *c;
	struct exec_plan *plan;
	// result is the pipe the run's init writes the program's wait
	// status to; go, unless -1, the pipe it waits on until the sandbox's
	// init has sealed the root.
	int result, go;
};

// run_stack is the run's init's stack while it shares the sandbox init's
// memory (the sandbox's init is suspended meanwhile).
static char run_stack[64 << 10] __attribute__((aligned(16)));

static void kill_rest(void);

// clear_ipc removes the run's SysV IPC objects once it is alone in its
// namespace. Its IPC namespace would free them too, but later (from a
// workqueue, after an RCU grace period), while their memory stays
// charged to the sandbox's cgroup that the next run is measured in.
static void clear_ipc(void)
{
	struct shm_info shm;
	int max = shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&shm);
	for (int i = 0; i <= max; i++) {
		struct shmid_ds ds;
		int id = shmctl(i, SHM_STAT, &ds);
		if (id >= 0)
			shmctl(id, IPC_RMID, NULL);
	}
	struct msginfo msg;
	max = msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&msg);
	for (int i = 0; i <= max; i++) {
		struct msqid_ds ds;
		int id = msgctl(i, MSG_STAT, &ds);
		if (id >= 0)
			msgctl(id, IPC_RMID, NULL);
	}
	struct seminfo sem;
	max = semctl(0, 0, SEM_INFO, &sem);
	for (int i = 0; i <= max; i++) {
		struct semid_ds ds;
		int id = semctl(i, 0, SEM_STAT, &ds);
		if (id >= 0)
			semctl(id, 0, IPC_RMID);
	}
}

static int run_main(void *p)
{
	const struct run_args *a = p;
	if (a->go >= 0) {
		char ready;
		ssize_t got;
		do {
			got = read(a->go, &ready, 1);
		} while (got < 0 && errno == EINTR);
		if (got != 1)
			_exit(125);
		close(a->go);
	}
	// The run's init keeps of the sandbox's init's descriptors only what
	// it uses: not the detached copy of the host's tree, nor the setup.
	if (a->c->host >= 0)
		close(a->c->host);
	close(NSINIT_CONFIG_FD);
	// A mount namespace of its own, for a /proc of its PID namespace:
	// the sandbox's /proc lists the sandbox init's namespace, where the
	// program's process ids would tell how many the earlier runs made.
	if (unshare(CLONE_NEWNS) < 0)
		fail("unshare mount namespace");
	if (a->c->proc)
		mount_proc(a->c->proc);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		fail("pipe");
	struct child_args args = {a->plan, pipefd[1]};
	pid_t child = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
	if (child < 0)
		fail("fork");
	// The program's setresuid, on the memory it shared, may have made
	// this memory dumpable again.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail("dumpable");
	close(pipefd[1]);
	await_exec(pipefd[0]);
	int ws = wait_program(child);
	// Alone in the run's namespaces (kill(-1) reaches everything else in
	// them), the run's init can remove what the run left there.
	kill_rest();
	clear_ipc();
	if (write(a->result, &ws, sizeof ws) != (ssize_t)sizeof ws)
		fail("report the program's status");
	_exit(0);
}

// reap_runs reaps the runs' inits that have ended or, with nohang unset,
// waits for every one. Nothing else can be left in the sandbox's PID
// namespace: every process of a run is in the run's.
static void reap_runs(int nohang)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, __WALL | (nohang ? WNOHANG : 0));
		if (pid > 0 || (pid < 0 && errno == EINTR))
			continue;
		return;
	}
}

// run_program runs the program in namespaces of its own and returns its
// wait status once nothing of the run is left. The sandbox's init has
// nothing to do meanwhile: it lends the run's init its memory (vfork)
// instead of having it copied. When the host's tree is still attached
// (overlapped), the run's init is a copy instead, started while the root
// is sealed (detaching the host's tree waits for the kernel), and waits
// for it.
static int run_program(struct config *c, struct exec_plan *plan, int overlapped)
{
	// The last run's init counts in the cgroup's processes until it is
	// reaped: its teardown has had the time since the report to finish.
	reap_runs(0);
	int res[2], gofd[2] = {-1, -1};
	if (pipe2(res, O_CLOEXEC) < 0)
		fail("pipe");
	if (overlapped && pipe2(gofd, O_CLOEXEC) < 0)
		fail("pipe");
	struct run_args a = {c, plan, res[1], gofd[0]};
	int flags = CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD;
	if (!overlapped)
		flags |= CLONE_VM | CLONE_VFORK;
	pid_t pid = clone(run_main, run_stack + sizeof run_stack, flags, &a);
	if (pid < 0)
		fail("start the run");
	close(res[1]);
	if (overlapped) {
		close(gofd[0]);
		// If sealing fails the init exits, and the kernel kills the
		// waiting process.
		seal(c);
		// A run's init that ended before it was released ends without
		// a status, below.
		ssize_t unused = write(gofd[1], "g", 1);
		(void)unused;
		close(gofd[1]);
	} else if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		fail("dumpable");
	}
	// The run's pipes must not stay open once its processes are gone.
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		close(devnull);
	}
	// The status comes once the run's init is alone and about to exit.
	// Its exit then tears its namespaces down (a mount namespace waits
	// for an RCU grace period): the run is over before that, and the
	// init reaps it later (reap_runs).
	int ws;
	ssize_t n;
	do {
		n = read(res[0], &ws, sizeof ws);
	} while (n < 0 && errno == EINTR);
	close(res[0]);
	if (n != (ssize_t)sizeof ws) {
		// A run's init that could not start the program said why.
		int rs = wait_program(pid);
		if (WIFEXITED(rs) && WEXITSTATUS(rs) == 125)
			_exit(125);
		errno = 0;
		fail("the run ended without the program's status (%d)", rs);
	}
	return ws;
}



// clear_dir removes everything below the directory dirfd, visiting at most
// *budget entries and depth levels. It returns -1 when that is not enough
// or anything fails: the caller then mounts the scratch afresh.
static int clear_dir(int dirfd, int depth, int *budget)
{
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long n = syscall(SYS_getdents64, dirfd, buf, sizeof buf);
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			if (--*budget < 0)
				return -1;
			if (d->d_type == DT_DIR) {
				if (depth == 0)
					return -1;
				int sub = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub < 0)
					return -1;
				int r = clear_dir(sub, depth - 1, budget);
				close(sub);
				if (r < 0 || unlinkat(dirfd, d->d_name, AT_REMOVEDIR) < 0)
					return -1;
			} else if (d->d_type == DT_UNKNOWN || unlinkat(dirfd, d->d_name, 0) < 0) {
				return -1;
			}
		}
	}
}

// is_empty reports whether the directory dirfd holds nothing but . and ..
static int is_empty(int dirfd)
{
	char buf[1024] __attribute__((aligned(8)));
	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return 0;
	long n = syscall(SYS_getdents64, dirfd, buf, sizeof buf);
	if (n < 0)
		return 0;
	for (long off = 0; off < n;) {
		struct dirent64 *d = (struct dirent64 *)(buf + off);
		off += d->d_reclen;
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			return 0;
	}
	return 1;
}

// reset_scratch makes each scratch mount of a kept sandbox what it was
// before the run: a run that left a few files costs their removal; one
// that left more, changed the mount's root (its mode, owner or extended
// attributes) or anything that cannot be removed costs a new tmpfs.
static void reset_scratch(const struct exec_plan *plan)
{
	const struct op *o = plan->keep;
	for (uint32_t i = 0; i < o->argc; i += 2) {
		const char *dst = o->argv[i].s, *opts = o->argv[i + 1].s;
		const struct stat *want = &plan->scratch[i / 2];
		struct stat st;
		int budget = 256;
		int fd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int clean = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == want->st_dev && st.st_ino == want->st_ino &&
			    st.st_mode == want->st_mode && st.st_uid == want->st_uid && st.st_gid == want->st_gid &&
			    flistxattr(fd, NULL, 0) == 0 && clear_dir(fd, 8, &budget) == 0 && is_empty(fd);
		if (fd >= 0)
			close(fd);
		if (clean)
			continue;
		if (umount2(dst, 0) < 0 && (errno != EBUSY || umount2(dst, MNT_DETACH) < 0))
			fail("unmount scratch %.256s", dst);
		if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
			fail("mount scratch %.256s", dst);
	}
}

// kill_rest leaves the init alone in its namespace: the init is the
// namespace's PID 1, so kill(-1) reaches every other process in it, and
// each orphan is reparented to the init before its parent can be reaped;
// a fork racing the kill fails, its parent being killed. Once the last
// one is reaped, nothing of the run can touch its workspace.
static void kill_rest(void)
{
	if (kill(-1, SIGKILL) < 0 && errno != ESRCH)
		fail("kill what the program left");
	for (;;) {
		if (waitpid(-1, NULL, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			fail("reap what the program left");
		}
	}
}

// recv_frame receives a frame with up to max descriptors (SCM_RIGHTS on
// its first byte, close-on-exec), and sets *got to how many came; any
// more are closed. With done set, a socket the backend has closed means
// the sandbox is done: the init exits quietly.
static char *recv_frame(int fd, int *fds, int max, int *got, size_t *size, int done)
{
	uint32_t len;
	union {
		char buf[CMSG_SPACE(NSINIT_MAX_GIVEN * sizeof(int))];
		struct cmsghdr align;
	} control;
	if (max > NSINIT_MAX_GIVEN)
		max = NSINIT_MAX_GIVEN;
	struct iovec iov = {&len, sizeof len};
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control.buf;
	mh.msg_controllen = sizeof control.buf;
	ssize_t n;
	do {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n == 0 && done)
		_exit(0);
	if (n == 0) {
		errno = 0;
		fail("config: truncated frame");
	}
	if (n < 0)
		fail("config: receive");
	*got = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof f, sizeof f);
			if (*got < max)
				fds[(*got)++] = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		errno = 0;
		fail("config: descriptors truncated");
	}
	if ((size_t)n < sizeof len)
		read_full(fd, (char *)&len + n, sizeof len - (size_t)n);
	return read_body(fd, len, size);
}

// recv_run receives the next run of a kept sandbox: its three standard
// streams, and its frame.
static char *recv_run(int fd, int fds[3], size_t *size)
{
	int got;
	char *buf = recv_frame(fd, fds, 3, &got, size, 1);
	if (got != 3) {
		errno = 0;
		fail("config: a later run without its three standard streams");
	}
	return buf;
}

// next_run waits for the next run of a kept sandbox and applies its
// second phase, after releasing the previous one's. The first phase's
// operations, which the plan's filter points into, are never released.
static void next_run(struct config *c, struct exec_plan *plan)
{
	int fds[3];
	size_t size;
	char *buf = recv_run(NSINIT_CONFIG_FD, fds, &size);
	for (int i = 0; i < 3; i++) {
		if (dup2(fds[i], i) < 0)
			fail("standard stream %d", i);
		close(fds[i]);
	}
	for (size_t i = 0; i < c->nops; i++)
		free(c->ops[i].argv);
	free(c->ops);
	free(c->frame);
	free(plan->argvp);
	free(plan->envp);
	const struct op *seccomp = plan->seccomp;
	int null = plan->null;
	memset(plan, 0, sizeof *plan);
	plan->seccomp = seccomp;
	plan->null = null;
	parse(buf, size, c);
	c->frame = buf;
	apply(c, plan);
	finish_plan(plan);
}

// run builds the sandbox in two phases and runs the program. The first
// phase, which every run shares, can be done before the run is known: the
// backend starts inits ahead of need, and each then waits, pivoted into
// its new root, for the second phase, which holds what is particular to
// its run. A sandbox the backend keeps (OP_KEEP) then serves later runs,
// one at a time.
static void __attribute__((noreturn)) run(void)
{
	static struct config c;
	struct exec_plan plan = {0};
	size_t size;
	char *buf;

	c.old = "";
	c.host = -1;
	c.attach = -1;
	// The init holds the detached copy of the host's tree while the
	// program runs: nothing running as another user may look into it.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail("dumpable");
	buf = recv_frame(NSINIT_CONFIG_FD, c.given, NSINIT_MAX_GIVEN, &c.ngiven, &size, 0);
	parse(buf, size, &c);
	open_sources(&c);
	apply(&c, &plan);
	if (!c.root[0]) {
		errno = 0;
		fail("config: the first phase has no root");
	}
	pivot(&c);
	lock_capabilities();
	plan.null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (plan.null < 0)
		fail("open /dev/null");

	// The config socket stays open until the init exits: releasing it
	// (its buffers are the first phase's) costs more than the run should
	// wait for, and the program's process closes it on exec.
	int got;
	buf = recv_frame(NSINIT_CONFIG_FD, &c.attach, 1, &got, &size, 0);
	if (got == 0)
		c.attach = -1;
	parse(buf, size, &c);
	c.frame = buf;
	apply(&c, &plan);
	finish_plan(&plan);
	// A mount sent for nothing is let go before the program runs.
	if (c.attach >= 0) {
		close(c.attach);
		c.attach = -1;
	}

	// Detaching the host's tree, when it is still attached, waits for the
	// kernel, and overlaps the start of the run. Otherwise sealing is
	// quick and comes first.
	int overlapped = c.old != NULL;
	if (!overlapped)
		seal(&c);
	for (;;) {
		int ws = run_program(&c, &plan, overlapped);
		overlapped = 0;
		// Every process of the run is gone (the run's init killed and
		// reaped them) but the run's init. The report says the run is
		// over: the backend may then hand the workspace back without
		// waiting for the namespaces to be torn down.
		if (!plan.keep) {
			report("X %d\n", ws);
			_exit(0);
		}
		// A kept sandbox's next run finds empty scratch mounts, new PID,
		// IPC and mount namespaces (run_program), and the cgroup's
		// counters reset by the backend.
		reset_scratch(&plan);
		report("X %d\n", ws);
		reap_runs(1);
		c.later = 1;
		next_run(&c, &plan);
	}
}

__attribute__((constructor)) static void nsinit(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 1 || argv == NULL || argv[0] == NULL || strcmp(argv[0], NSINIT_ARGV0) != 0)
		return;
	run();
}
