// Declarations shared by the sandbox init's C files (see nsinit.c): the
// system headers, definitions older C libraries lack, the parsed setup and
// the functions one file calls in another. Private to this package.
#ifndef CODERUNNER_NSINIT_INTERNAL_H
#define CODERUNNER_NSINIT_INTERNAL_H

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
#include <poll.h>
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
	// run is the latest run's init.
	pid_t run;
	// given are the bind sources that came with the first phase, in the
	// order of its OP_GIVEN operations, until open_sources takes them.
	int given[NSINIT_MAX_GIVEN];
	int ngiven;
};

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
	// another run after this one, and each run has a mount namespace of
	// its own with the scratch mounts it names mounted anew.
	const struct op *keep;
	// send_workspace, when set, is the OP_SEND_WORKSPACE of the run: its
	// init sends that directory to the backend (send_dir).
	const struct op *send_workspace;
};

#pragma GCC visibility push(hidden)

// the setup stream and the report (frame.c)
void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...);
void parse(char *buf, size_t size, struct config *c);
void want_args(const struct op *o, uint32_t n);
long long number(const struct arg *a, int base);
void report(const char *fmt, ...);
char *recv_frame(int fd, int *fds, int max, int *got, size_t *size, int done);
char *recv_run(int fd, int fds[3], int *attach, size_t *size);
void send_dir(int fd, const char *dir);

// the sandbox's root: mounts, bind sources, the pivot (mounts.c)
void in_root(const struct config *c, const char *path, char *out);
void mkdir_all(const char *root, char *path, mode_t mode);
void make_parent(const char *root, const char *path);
void op_bind(const struct config *c, const struct op *o);
void op_attach(struct config *c, const struct op *o);
void op_file(const struct config *c, const struct op *o);
void op_dev(const struct config *c, const struct op *o);
void mount_proc(const char *dst);
void op_proc(struct config *c, const struct op *o);
void op_userns_max(const struct op *o);
void loopback_up(void);
void pivot(struct config *c);
void seal(struct config *c);
void open_sources(struct config *c);
int run_fs_op(uint32_t code);
void apply_fs_op(struct config *c, const struct op *o);
void run_mounts(struct config *c, const struct exec_plan *plan);

// the network namespace of a kept sandbox (network.c)
void network_baseline(void);
int network_clean(void);
void network_close_fds(void);

// a run: its namespaces, the program's start, what it leaves (program.c)
void lock_capabilities(void);
void finish_plan(struct exec_plan *plan);
void reap_run(pid_t run);
int run_program(struct config *c, struct exec_plan *plan, int overlapped);

#pragma GCC visibility pop

#endif
