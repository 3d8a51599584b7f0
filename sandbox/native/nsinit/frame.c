// The frame protocol between the backend and the sandbox init: reading and
// parsing the setup stream (frames of operations, with descriptors on
// their first byte), and the one-line reports on the status descriptor.

#include "internal.h"

static int status_fd = NSINIT_STATUS_FD;

// fail reports a setup failure to the parent and exits. The message is one
// line: "E <stage>: <detail>: <strerror>".
void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
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

void parse(char *buf, size_t size, struct config *c)
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

void want_args(const struct op *o, uint32_t n)
{
	if (o->argc != n) {
		errno = 0;
		fail("config: op %u wants %u arguments, has %u", o->code, n, o->argc);
	}
}

long long number(const struct arg *a, int base)
{
	char *end;
	errno = 0;
	long long v = strtoll(a->s, &end, base);
	if (errno != 0 || *end != '\0' || end == a->s)
		fail("config: bad number %.32s", a->s);
	return v;
}

// report writes one line to the parent.
void report(const char *fmt, ...)
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

// recv_frame receives a frame with up to max descriptors (SCM_RIGHTS on
// its first byte, close-on-exec), and sets *got to how many came; any
// more are closed. With done set, a socket the backend has closed means
// the sandbox is done: the init exits quietly.
char *recv_frame(int fd, int *fds, int max, int *got, size_t *size, int done)
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
// streams, the detached mount of its host workspace if it has one (else
// *attach is -1), and its frame.
char *recv_run(int fd, int fds[3], int *attach, size_t *size)
{
	int got, all[4];
	char *buf = recv_frame(fd, all, 4, &got, size, 1);
	if (got < 3) {
		errno = 0;
		fail("config: a later run without its three standard streams");
	}
	for (int i = 0; i < 3; i++)
		fds[i] = all[i];
	*attach = got == 4 ? all[3] : -1;
	return buf;
}

// send_dir sends the directory dir, opened read-only without following a
// link, to the backend over the socket fd: one byte, "W", with the
// descriptor as SCM_RIGHTS on it.
void send_dir(int fd, const char *dir)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		fail("open %.256s to send it", dir);
	char byte = 'W';
	struct iovec iov = {&byte, 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	memset(&control, 0, sizeof control);
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control.buf;
	mh.msg_controllen = sizeof control.buf;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &d, sizeof d);
	ssize_t n;
	do {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		fail("send %.256s", dir);
	close(d);
}
