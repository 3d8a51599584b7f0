// The sandbox init. The native backend starts this binary again, inside fresh
// user, PID, mount, network, IPC, UTS and cgroup namespaces, with argv[0] set
// to NSINIT_ARGV0. This constructor runs before the Go runtime starts (as
// runc's nsexec does): the Go runtime cannot be trusted to do mount work,
// fork and exec from a multi-threaded process, and starting it would cost
// more than the whole sandbox setup.
//
// As PID 1 of the new PID namespace it builds the root filesystem, then
// starts each run in PID and IPC namespaces of the run's own, with a /proc
// of its own, where the user program drops every privilege and execs. It reports the
// program's wait status on fd 4 once nothing of the run is left, and
// exits, or, in a kept sandbox, waits for the next run.
//
// The code is split by concern: frame.c (the setup stream and reports),
// mounts.c (the root), program.c (each run and its program); this file
// holds the two phases and the init's loop.

#include "internal.h"

// allowed_later reports whether a later run, in a sealed sandbox, may
// ask for op: the program's own settings and its changes to the scratch
// mounts, which are the only writable places left.
static int allowed_later(uint32_t op)
{
	switch (op) {
	case OP_RLIMIT:
	case OP_USER:
	case OP_CWD:
	case OP_ARGV:
	case OP_ENV:
	case OP_STDIN_NULL:
	case OP_KEEP:
	case OP_SEND_WORKSPACE:
		return 1;
	}
	return run_fs_op(op);
}

// keeps reports whether the phase in c asks for the sandbox to be kept
// after its run.
static int keeps(const struct config *c)
{
	for (size_t i = 0; i < c->nops; i++)
		if (c->ops[i].code == OP_KEEP)
			return 1;
	return 0;
}

// keep records that the sandbox serves another run after this one, and
// the scratch mounts each run gets anew.
static void keep(struct exec_plan *plan, const struct op *o)
{
	if (o->argc == 0 || o->argc % 2 != 0 || o->argc / 2 > MAX_SCRATCH) {
		errno = 0;
		fail("config: op %u with %u arguments", o->code, o->argc);
	}
	plan->keep = o;
	// What the network namespace must look like after each run: as
	// before the first. A sandbox never kept (one per request) does
	// not read it.
	network_baseline();
}

// apply carries out the operations of one phase. The program's own
// settings are only recorded in plan; they take effect in its process.
// So are the run's changes to the filesystem in a phase that keeps the
// sandbox: the run's init makes them in the run's own mount namespace
// (run_mounts).
static void apply(struct config *c, struct exec_plan *plan)
{
	int per_run = keeps(c);
	for (size_t i = 0; i < c->nops; i++) {
		const struct op *o = &c->ops[i];
		char path[PATH_MAX];
		if (c->later && !allowed_later(o->code)) {
			errno = 0;
			fail("config: op %u in a later run", o->code);
		}
		if (run_fs_op(o->code)) {
			if (!per_run)
				apply_fs_op(c, o);
			continue;
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
		case OP_BIND:
			op_bind(c, o);
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
			keep(plan, o);
			break;
		case OP_SEND_WORKSPACE:
			want_args(o, 1);
			plan->send_workspace = o;
			break;
		default:
			errno = 0;
			fail("config: unknown op %u", o->code);
		}
	}
}

// unused_attach lets go of a mount sent for nothing before the program
// runs. In a kept sandbox the run's init attaches it (run_mounts).
static void unused_attach(struct config *c, const struct exec_plan *plan)
{
	if (c->attach >= 0 && !plan->keep) {
		close(c->attach);
		c->attach = -1;
	}
}

// next_run waits for the next run of a kept sandbox and applies its
// second phase, after releasing the previous one's. The first phase's
// operations, which the plan's filter points into, are never released.
static void next_run(struct config *c, struct exec_plan *plan)
{
	int fds[3];
	size_t size;
	char *buf = recv_run(NSINIT_CONFIG_FD, fds, &c->attach, &size);
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
	unused_attach(c, plan);
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
	unused_attach(&c, &plan);

	// Detaching the host's tree, when it is still attached, waits for the
	// kernel, and overlaps the start of the run. Otherwise sealing is
	// quick and comes first.
	int overlapped = c.old != NULL;
	if (!overlapped)
		seal(&c);
	for (;;) {
		// The run's init attaches the host workspace in its own mount
		// namespace and closes its copy of the descriptor; this is the
		// init's.
		int attach = c.attach;
		int ws = run_program(&c, &plan, overlapped);
		if (attach >= 0)
			close(attach);
		c.attach = -1;
		overlapped = 0;
		// Every process of the run is gone (the run's init killed and
		// reaped them) but the run's init. The report says the run is
		// over: the backend may then hand the workspace back without
		// waiting for the namespaces to be torn down.
		report("X %d\n", ws);
		if (!plan.keep)
			_exit(0);
		// The rest is done while the backend takes the result in. The
		// next run must find no socket in the network namespace and its
		// counters as they were before the first run: where this run
		// left a socket (a TCP connection in TIME_WAIT outlives its
		// process) or moved a counter, the sandbox ends. The run's
		// mounts go with its init, whose exit is awaited: the memory of
		// its scratch mounts is then no longer charged. "R" says the
		// sandbox is ready: the backend reads it before it gives the
		// sandbox another run.
		if (!network_clean())
			_exit(0);
		reap_run(c.run);
		report("R\n");
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
