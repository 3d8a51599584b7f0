// The sandbox's root: bind sources opened while the host's tree is still
// reachable, the mounts each operation makes, the pivot into the new root
// and the detaching of the host's tree, and the scratch mounts emptied
// between the runs of a kept sandbox.

#include "internal.h"

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
void in_root(const struct config *c, const char *path, char *out)
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
void mkdir_all(const char *root, char *path, mode_t mode)
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

void make_parent(const char *root, const char *path)
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

void op_bind(const struct config *c, const struct op *o)
{
	want_args(o, 3);
	char dst[PATH_MAX];
	struct stat st;
	int writable = strcmp(o->argv[2].s, "rw") == 0, own;
	uint64_t noexec = strcmp(o->argv[2].s, "ro,noexec") == 0 ? MOUNT_ATTR_NOEXEC : 0;
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
	bind_fd(c, fd, dst, o->argv[1].s, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | noexec | (writable ? 0 : MOUNT_ATTR_RDONLY));
	if (own)
		close(fd);
}

// op_attach attaches the detached mount the backend sent with the second
// phase (a clone of the run's host workspace, made private, nosuid and
// nodev by the backend before it was sent) on dst, over what the first
// phase mounted there. Unlike a bind source, it need not be in the
// init's copy of the host's tree: a sandbox started ahead of need serves
// a workspace mounted after it started.
void op_attach(struct config *c, const struct op *o)
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

void op_file(const struct config *c, const struct op *o)
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

void op_dev(const struct config *c, const struct op *o)
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
void mount_proc(const char *dst)
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
void op_proc(struct config *c, const struct op *o)
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
void op_userns_max(const struct op *o)
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

void loopback_up(void)
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
void pivot(struct config *c)
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
void seal(struct config *c)
{
	for (int i = 0; i < c->nsources; i++)
		close(c->sources[i].fd);
	c->nsources = 0;
	if (c->old)
		detach_old_root(c);
	if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		fail("remount / read-only");
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
void open_sources(struct config *c)
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

// run_fs_op reports whether code is one of the changes a run makes to
// the filesystem, the only ones a later run of a sealed sandbox may ask
// for besides the program's own settings.
int run_fs_op(uint32_t code)
{
	return code == OP_MKDIR || code == OP_FILE || code == OP_ATTACH;
}

// apply_fs_op makes one change of run_fs_op's.
void apply_fs_op(struct config *c, const struct op *o)
{
	char path[PATH_MAX];
	switch (o->code) {
	case OP_MKDIR:
		want_args(o, 4);
		in_root(c, o->argv[0].s, path);
		mkdir_all(c->root, path, (mode_t)number(&o->argv[1], 8));
		if (chown(path, (uid_t)number(&o->argv[2], 10), (gid_t)number(&o->argv[3], 10)) < 0)
			fail("chown %.256s", o->argv[0].s);
		if (chmod(path, (mode_t)number(&o->argv[1], 8)) < 0)
			fail("chmod %.256s", o->argv[0].s);
		break;
	case OP_FILE:
		op_file(c, o);
		break;
	case OP_ATTACH:
		op_attach(c, o);
		break;
	}
}

// attach_target reports whether the run's phase attaches its host
// workspace on dst.
static int attach_target(const struct config *c, const char *dst)
{
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		if (o->code == OP_ATTACH && o->argc == 1 && strcmp(o->argv[0].s, dst) == 0)
			return 1;
	}
	return 0;
}

// run_mounts gives a run of a kept sandbox a mount namespace of its own,
// a copy of the sandbox's, in the run's init: each scratch mount of
// plan's OP_KEEP mounted anew over the sandbox's (but where the run's host
// workspace goes), then the run's own changes to the filesystem (files,
// directories, the workspace) made there. The sandbox's namespace
// never changes after the first run: nothing needs emptying or unmounting
// once the run is over, and its exit tears all of the run's mounts down
// at once, a single wait for the kernel's grace period where unmounting
// them one by one waited once per mount.
void run_mounts(struct config *c, const struct exec_plan *plan)
{
	if (unshare(CLONE_NEWNS) < 0)
		fail("unshare the run's mount namespace");
	const struct op *k = plan->keep;
	for (uint32_t i = 0; i + 1 < k->argc; i += 2) {
		const char *dst = k->argv[i].s, *opts = k->argv[i + 1].s;
		if (attach_target(c, dst))
			continue;
		char path[PATH_MAX];
		in_root(c, dst, path);
		if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
			fail("mount scratch %.256s", dst);
	}
	for (size_t i = 0; i < c->nops; i++)
		if (run_fs_op(c->ops[i].code))
			apply_fs_op(c, &c->ops[i]);
}
