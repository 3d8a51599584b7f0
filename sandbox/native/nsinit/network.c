// The network namespace of a kept sandbox: whether a run left anything in
// it that the next run, another request's, could see. The namespace has
// only its loopback interface, which the program cannot configure, but a
// run can leave sockets (a TCP connection in TIME_WAIT outlives its
// process) and move counters (the interface's packets and bytes, the IP,
// UDP and TCP statistics) that anyone in the namespace may read.

#include "internal.h"

// The counters' files, which /proc/self/net shows for the reader's own
// network namespace.
static const char *const counter_files[] = {
	"/proc/self/net/dev",
	"/proc/self/net/snmp",
	"/proc/self/net/snmp6",
};

#define COUNTERS_MAX (64 << 10)

// baseline is what counter_files said before the first run; base_len is
// -1 until it is read, or when it could not be.
static char baseline[COUNTERS_MAX], current[COUNTERS_MAX];
static ssize_t base_len = -1;

// read_counters reads every counter file into buf, one after the other,
// and returns the length, or -1.
static ssize_t read_counters(char *buf)
{
	size_t len = 0;
	for (size_t i = 0; i < sizeof counter_files / sizeof counter_files[0]; i++) {
		int fd = open(counter_files[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		for (;;) {
			if (len == COUNTERS_MAX) {
				close(fd);
				return -1;
			}
			ssize_t n = read(fd, buf + len, COUNTERS_MAX - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				close(fd);
				return -1;
			}
			if (n == 0)
				break;
			len += (size_t)n;
		}
		close(fd);
	}
	return (ssize_t)len;
}

void network_baseline(void)
{
	base_len = read_counters(baseline);
}

// sockstat_clean reports whether every count of a /proc/net/sockstat file
// of the init's network namespace that tells of sockets (used, inuse,
// orphan, tw) is zero. The other counts (alloc, mem) are the host's.
static int sockstat_clean(const char *path)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof buf - 1)
		return 0;
	buf[n] = '\0';
	static const char *const counts[] = {" used ", " inuse ", " orphan ", " tw "};
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
	if (!sockstat_clean("/proc/self/net/sockstat") || !sockstat_clean("/proc/self/net/sockstat6"))
		return 0;
	if (base_len < 0)
		return 0;
	ssize_t n = read_counters(current);
	return n == base_len && memcmp(current, baseline, (size_t)n) == 0;
}
