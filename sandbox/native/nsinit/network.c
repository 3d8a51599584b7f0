// The network namespace of a kept sandbox: whether a run left anything in
// it that the next run, another request's, could see. The namespace has
// only its loopback interface, which the program cannot configure, but a
// run can leave sockets (a TCP connection in TIME_WAIT outlives its
// process) and move counters (the interface's packets and bytes, the IP,
// UDP and TCP statistics) that anyone in the namespace may read.
//
// The files are opened once, when the sandbox is first asked to serve
// more than one run, and read again from their start after every run:
// each read shows the namespace as it is then, and opening them anew
// would cost as much as reading them.

#include "internal.h"

// The files, which /proc/self/net shows for the reader's own network
// namespace: first the socket counts, then the counters.
static const char *const net_files[] = {
	"/proc/self/net/sockstat",
	"/proc/self/net/sockstat6",
	"/proc/self/net/dev",
	"/proc/self/net/snmp",
	"/proc/self/net/snmp6",
};

#define NET_FILES (sizeof net_files / sizeof net_files[0])
#define SOCKSTATS 2
#define COUNTERS_MAX (64 << 10)

// net_fds are the files, open from network_baseline on; baseline is what
// the counters said then, and base_len its length, -1 until it is read
// or when it could not be (a sandbox that cannot check is never reused).
static int net_fds[NET_FILES] = {-1, -1, -1, -1, -1};
static char baseline[COUNTERS_MAX], current[COUNTERS_MAX];
static ssize_t base_len = -1;

// read_from reads fd from its start to its end into buf, at most size
// bytes, and returns the length, or -1 when it fails or does not fit.
static ssize_t read_from(int fd, char *buf, size_t size)
{
	size_t len = 0;
	for (;;) {
		if (len == size)
			return -1;
		ssize_t n = pread(fd, buf + len, size - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return (ssize_t)len;
		len += (size_t)n;
	}
}

// read_counters reads every counter file into buf, one after the other,
// and returns the length, or -1.
static ssize_t read_counters(char *buf)
{
	size_t len = 0;
	for (size_t i = SOCKSTATS; i < NET_FILES; i++) {
		ssize_t n = read_from(net_fds[i], buf + len, COUNTERS_MAX - len);
		if (n < 0)
			return -1;
		len += (size_t)n;
	}
	return (ssize_t)len;
}

void network_baseline(void)
{
	if (net_fds[0] >= 0)
		return;
	for (size_t i = 0; i < NET_FILES; i++) {
		int fd = open(net_files[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			for (size_t j = 0; j < i; j++) {
				close(net_fds[j]);
				net_fds[j] = -1;
			}
			return;
		}
		net_fds[i] = fd;
	}
	base_len = read_counters(baseline);
}

void network_close_fds(void)
{
	// Only the descriptors: the caller may share the init's memory.
	for (size_t i = 0; i < NET_FILES; i++) {
		if (net_fds[i] >= 0)
			close(net_fds[i]);
	}
}

// sockstat_clean reports whether every count of a /proc/net/sockstat file
// of the init's network namespace that tells of its sockets (used, inuse,
// tw) is zero. The other counts are the host's: alloc and mem, and orphan,
// the host's TCP sockets closed but not yet gone (a server's connections
// closed by its clients), which would end every kept sandbox on a busy
// host; the namespace's own orphans are still in its inuse.
static int sockstat_clean(int fd)
{
	char buf[1024];
	ssize_t n = read_from(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	static const char *const counts[] = {" used ", " inuse ", " tw "};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		for (const char *p = strstr(buf, counts[i]); p; p = strstr(p + 1, counts[i])) {
			const char *v = p + strlen(counts[i]);
			if (v[0] != '0' || (v[1] != ' ' && v[1] != '\n' && v[1] != '\0'))
				return 0;
		}
	}
	return 1;
}

int network_clean(void)
{
	if (net_fds[0] < 0 || base_len < 0)
		return 0;
	for (size_t i = 0; i < SOCKSTATS; i++) {
		if (!sockstat_clean(net_fds[i]))
			return 0;
	}
	ssize_t n = read_counters(current);
	return n == base_len && memcmp(current, baseline, (size_t)n) == 0;
}
