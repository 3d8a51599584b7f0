// A run: the run's init in new PID and IPC namespaces, the
// program's process with every privilege dropped, waiting for it, and
// removing what it left (processes, SysV IPC objects).

#include "internal.h"

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
void lock_capabilities(void)
{
	// Lock the capability rules so that uid 0 in the namespace (when the
	// backend runs unprivileged and can map only one uid) gains nothing
	// from exec.
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
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

// finish_plan checks that a run's second phase said everything the
// program needs, and builds its argv and environment.
void finish_plan(struct exec_plan *plan)
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

// Each run has a PID and an IPC namespace of its own, nested in the
// sandbox's: a first process (the run's init, PID 1 there) is cloned
// into them, mounts a /proc for the new PID namespace over the
// sandbox's (a kept sandbox's init unmounts it after the run), and starts
// the program as its only child (PID 2, as in a sandbox of its own, so that
// signals reach it as they would anywhere: a namespace's PID 1 ignores
// the ones it has no handler for). When the program ends, the run's init
// writes its wait status on a pipe and exits, and the kernel kills and
// reaps everything left in its PID namespace before the sandbox's init
// can reap it. So nothing of a run, not even a PID counter, an IPC
// object or a process, is there for the next run of a kept sandbox, and
// the first run's IPC objects are not the sandbox init's either.

struct run_args {
	struct config *c;
	struct exec_plan *plan;
	// result is the pipe the run's init writes the program's wait
	// status to; go, unless -1, the pipe it waits on until the sandbox's
	// init has sealed the root.
	int result, go;
};

// run_stack is the run's init's stack while it shares the sandbox init's
// memory (the sandbox's init is suspended meanwhile).
static char run_stack[64 << 10] __attribute__((aligned(16)));

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
	// it uses: not the detached copy of the host's tree, the setup, nor
	// the network namespace's files a kept sandbox checks.
	if (a->c->host >= 0)
		close(a->c->host);
	network_close_fds();
	// A kept sandbox's run has a mount namespace of its own, with its
	// scratch mounts and its files.
	if (a->plan->keep)
		run_mounts(a->c, a->plan);
	// A /proc of the run's PID namespace, over the sandbox's, which
	// lists the sandbox init's namespace, where the program's process ids
	// would tell how many the earlier runs made. In a kept sandbox it is
	// in the run's mount namespace, which goes with the run.
	if (a->c->proc)
		mount_proc(a->c->proc);
	// The backend reads the run's private workspace once the run is
	// over, whatever becomes of the run's init: it gets the directory
	// now, made by this init and not yet touched by the program.
	if (a->plan->send_workspace)
		send_dir(NSINIT_CONFIG_FD, a->plan->send_workspace->argv[0].s);
	close(NSINIT_CONFIG_FD);
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

// reap_run waits until the run's init has ended and reaps it. Its exit
// tears the run's namespaces down, its mounts and their memory with
// them, which the next run's cgroup must not find charged. Nothing else
// can be left in the sandbox's PID namespace: every process of a run is
// in the run's.
void reap_run(pid_t run)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, __WALL);
		if (pid == run || (pid < 0 && errno == ECHILD))
			return;
		if (pid < 0 && errno != EINTR)
			fail("reap the run's init");
	}
}

// run_program runs the program in namespaces of its own and returns its
// wait status once nothing of the run is left. The sandbox's init has
// nothing to do meanwhile: it lends the run's init its memory (vfork)
// instead of having it copied. When the host's tree is still attached
// (overlapped), the run's init is a copy instead, started while the root
// is sealed (detaching the host's tree waits for the kernel), and waits
// for it.
int run_program(struct config *c, struct exec_plan *plan, int overlapped)
{
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
	c->run = pid;
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
	// Its exit then tears its namespaces down: the run is over before
	// that, and a kept sandbox's init reaps it after its report
	// (reap_run).
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
