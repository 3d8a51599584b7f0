/* The wire format between the native backend (Go) and the sandbox init.
 * The parent writes two frames to fd 3 (a stream socket), each a u32 length
 * and that many bytes of operations: the first phase (shared by every run,
 * and sent when the init is started ahead of need) and the second (the
 * run's own). A second phase with OP_KEEP asks the init to wait, once the
 * program has ended, for another run in the same sandbox: its frame comes
 * with the run's stdin, stdout and stderr as SCM_RIGHTS on its first byte
 * (and a fourth descriptor, the detached mount of the run's host workspace,
 * when it has one), and holds only OP_FILE, OP_MKDIR, OP_ATTACH, OP_KEEP
 * and the program's own operations (the init refuses any other; in the
 * sealed root only the scratch mounts can take a file or a directory).
 * Each run of a phase with OP_KEEP has a mount namespace of its own, a copy
 * of the sandbox's with each scratch mount OP_KEEP names mounted anew, where
 * its OP_FILE, OP_MKDIR and OP_ATTACH are made; it goes with the
 * run, so the sandbox's own mounts never change after the first phase.
 * Each operation is: u32 op, u32 argc, then argc times (u32 len, len bytes,
 * one NUL). Integers are in host byte order: both ends are the same binary
 * on the same machine.
 * The first phase may come with descriptors as SCM_RIGHTS on its first
 * byte, up to NSINIT_MAX_GIVEN: bind sources the backend opened (O_PATH,
 * through /proc/<init>/root) because the init's own user may not reach
 * them; the i-th OP_GIVEN names the i-th descriptor.
 * A new sandbox's second phase may come with one descriptor as SCM_RIGHTS on
 * its first byte: a detached mount (open_tree) of the run's host workspace,
 * which OP_ATTACH attaches; the init closes it if no OP_ATTACH uses it.
 * With OP_SEND_WORKSPACE in a second phase, the run's init sends the run's
 * private workspace back on fd 3 before the program starts: one byte, "W",
 * with the directory, open read-only, as SCM_RIGHTS. The backend reads
 * what the program left there once the run is over; nothing else is ever
 * written to fd 3 by the init.
 *
 * The init writes one line per run to fd 4: "X <wait status>" once the
 * program has ended (and, with OP_KEEP, once nothing of the run is left),
 * or "E <reason>" when the sandbox could not be set up, after which it
 * exits. With OP_KEEP, once it has made the sandbox ready for another run
 * (the network namespace checked, the run's namespaces torn down) it writes
 * "R"; where it cannot (a socket or a moved counter left in the network
 * namespace) it exits instead, without a word. */
#ifndef CODERUNNER_NSINIT_H
#define CODERUNNER_NSINIT_H

enum nsinit_op {
	OP_ROOT = 1,		/* path: mount the new root tmpfs there */
	OP_MKDIR = 2,		/* path, mode(octal), uid, gid */
	OP_BIND = 3,		/* src, dst, "ro"|"rw"|"ro,noexec" */
	OP_SYMLINK = 4,		/* target, linkpath */
	OP_TMPFS = 5,		/* dst, options */
	OP_FILE = 6,		/* path, content, mode(octal), uid, gid */
	OP_PROC = 7,		/* dst */
	OP_HOSTNAME = 8,	/* name */
	OP_LOOPBACK = 9,	/* (none) */
	OP_CGROUPNS = 10,	/* (none) */
	OP_RLIMIT = 11,		/* resource, soft, hard (decimal) */
	OP_USER = 12,		/* uid, gid */
	OP_CWD = 13,		/* path */
	OP_SECCOMP = 14,	/* struct sock_filter[] */
	OP_ARGV = 15,		/* args... */
	OP_ENV = 16,		/* env... */
	OP_DEV = 17,		/* name: bind /dev/<name> from the host */
	OP_STDIN_NULL = 18,	/* (none): the program reads /dev/null */
	OP_PREOPEN = 19,	/* path: open a bind source a later phase may use */
	OP_KEEP = 21,		/* (dst, options)...: run in a mount namespace of
			    the run's own where each dst is a new tmpfs with
			    options; after the program, kill what is left and
			    wait for another run */
	OP_USERNS_MAX = 22,	/* name, value: write /proc/sys/user/<name> (a
			       max_* entry) of the sandbox's user namespace */
	OP_ATTACH = 23,		/* dst: attach the detached mount that came with the
			    second phase on dst */
	OP_GIVEN = 24,		/* path: the bind source path is the next descriptor
			    that came with the first phase */
	OP_SEND_WORKSPACE = 25, /* dir: send the run's dir, open, to the backend
				   before the program starts */
};

#define NSINIT_ARGV0 "coderunner-nsinit"
#define NSINIT_CONFIG_FD 3
#define NSINIT_STATUS_FD 4
#define NSINIT_MAX_CONFIG (96u << 20)
#define NSINIT_MAX_GIVEN 64

#endif
