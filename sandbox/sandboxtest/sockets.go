package sandboxtest

import (
	"bufio"
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// socketProbe tries socket(2) and socketpair(2) through syscall(2), so that
// arguments reach the kernel exactly as written (high bits included), for
// every address family below 64 and a few beyond the kernel's AF_MAX, each
// with every socket type and a range of protocols: the netlink kinds
// (NETLINK_ROUTE 0, SOCK_DIAG 4, XFRM 6, AUDIT 9, CONNECTOR 11, NETFILTER
// 12, KOBJECT_UEVENT 15, GENERIC 16), PF_KEY_V2 (2), Bluetooth's HCI (1),
// and htons(ETH_P_ALL) and htons(ETH_P_IP) for AF_PACKET. AF_VSOCK is 40,
// AF_ALG 38, AF_BLUETOOTH 31, AF_XDP 44, AF_KEY 15, AF_PACKET 17,
// AF_NETLINK 16. It prints one line per call and family: how many
// combinations succeeded and the distinct errnos of those that failed.
const socketProbe = `
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const long types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_RDM, SOCK_SEQPACKET, 6 /* SOCK_DCCP */, 10 /* SOCK_PACKET */};
static const long protos[] = {0, 1, 2, 3, 4, 6, 9, 11, 12, 15, 16, 17, 0x0300, 0x0008};

static void try(int pair, long fam) {
	int ok = 0, nerr = 0, errs[64];
	for (unsigned t = 0; t < sizeof types / sizeof *types; t++) {
		for (unsigned p = 0; p < sizeof protos / sizeof *protos; p++) {
			long r;
			int sv[2];
			if (!pair) {
				r = syscall(SYS_socket, fam, types[t], protos[p]);
				if (r >= 0) close((int)r);
			} else {
				r = syscall(SYS_socketpair, fam, types[t], protos[p], sv);
				if (r == 0) { close(sv[0]); close(sv[1]); }
			}
			if (r >= 0) { ok++; continue; }
			int seen = 0;
			for (int i = 0; i < nerr; i++) seen |= errs[i] == errno;
			if (!seen && nerr < 64) errs[nerr++] = errno;
		}
	}
	printf("%s %ld %d", pair ? "socketpair" : "socket", fam, ok);
	for (int i = 0; i < nerr; i++) printf("%c%d", i ? ',' : ' ', errs[i]);
	printf("\n");
}

int main(void) {
	static const long beyond[] = {64, 255, 256, 1000, 65535, 0x7fffffffL, -1L,
		(1L << 32) | 40, (1L << 32) | 16, (1L << 32) | 17, (1L << 32) | 0, (-1L << 32) | 38};
	for (long f = 0; f < 64; f++) { try(0, f); try(1, f); }
	for (unsigned i = 0; i < sizeof beyond / sizeof *beyond; i++) { try(0, beyond[i]); try(1, beyond[i]); }
	printf("done\n");
	return 0;
}`

// Address families a program may use, and the errno every other family
// gets (EAFNOSUPPORT, what the kernel answers for a family it was built
// without). The kernel answers other errnos for a family it does reach
// (EPERM without CAP_NET_RAW, EOPNOTSUPP from socketpair, ESOCKTNOSUPPORT
// for a wrong type), so a single errno over every type and protocol shows
// that no request reached the family's code.
const (
	afUnix       = 1
	afInet       = 2
	afInet6      = 10
	eafnosupport = 97
)

// testSocketFamilies attacks the socket family allow-list: only AF_UNIX,
// AF_INET and AF_INET6 sockets may be created. AF_VSOCK is not namespaced
// (on a VM it reaches the hypervisor's services), netlink, packet, key,
// alg, bluetooth and XDP sockets are large kernel attack surfaces, and a
// family with no code loaded makes the kernel ask for its module.
func (s *suite) testSocketFamilies(t *testing.T) {
	if s.CC == "" {
		t.Skip("no C compiler given to build the socket probe")
	}
	spec := s.spec("/workspace/probe")
	spec.Files = []sandbox.File{{Path: "probe", Content: buildC(t, s.CC, socketProbe), Mode: 0o755}}
	// Each family the kernel has no code for makes it look for a module:
	// under emulation (the cgroup v2 guest without KVM) the probe takes
	// far longer than the suite's usual limits, which this test is not
	// about.
	spec.Limits.WallTime, spec.Limits.CPUTime = 5*time.Minute, 5*time.Minute
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)

	lines, done := 0, false
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		line := sc.Text()
		if line == "done" {
			done = true
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("unexpected line %q", line)
		}
		call := f[0]
		fam, err1 := strconv.ParseInt(f[1], 10, 64)
		ok, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("unexpected line %q", line)
		}
		var errnos []int
		if len(f) > 3 {
			for _, e := range strings.Split(f[3], ",") {
				n, err := strconv.Atoi(e)
				if err != nil {
					t.Fatalf("unexpected line %q", line)
				}
				errnos = append(errnos, n)
			}
		}
		lines++
		switch {
		case fam == afUnix || (call == "socket" && (fam == afInet || fam == afInet6)):
			if ok == 0 {
				t.Errorf("%s(%d) never succeeded (errnos %v): the family must stay usable", call, fam, errnos)
			}
		case fam == afInet || fam == afInet6:
			// socketpair of an inet family: the kernel's own EOPNOTSUPP.
		default:
			if ok > 0 || !slices.Equal(errnos, []int{eafnosupport}) {
				t.Errorf("%s(%#x): %d combinations succeeded, errnos %v; want every one refused with EAFNOSUPPORT (%d)",
					call, uint64(fam), ok, errnos, eafnosupport)
			}
		}
	}
	if want := 2 * (64 + 12); !done || lines != want {
		t.Fatalf("probe printed %d results (done %v), want %d\nstdout: %.2000s\nstderr: %.2000s", lines, done, want, res.Stdout, res.Stderr)
	}
}

// deniedCallsProbe calls each system call denied for having no use in a
// sandboxed program and a record of kernel bugs: the x86 LDT, NUMA memory
// policy and page migration, secret memory, the legacy AIO interface, and
// acting on another process's memory through a pidfd. Arguments are
// harmless and would make the kernel answer something other than EPERM
// (success, EINVAL, EBADF, ENOSYS) if the call got through.
const deniedCallsProbe = `
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_set_mempolicy_home_node
#define SYS_set_mempolicy_home_node 450
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif

static void probe(const char *name, long r) { printf("%s %d\n", name, r < 0 ? errno : 0); }

int main(void) {
	static char buf[256];
	unsigned long mask[16] = {1};
	unsigned long ctx = 0;
	void *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#ifdef SYS_modify_ldt
	probe("modify_ldt", syscall(SYS_modify_ldt, 0, buf, sizeof buf));
#endif
	probe("mbind", syscall(SYS_mbind, page, 4096, 0, 0, 0, 0));
	probe("set_mempolicy", syscall(SYS_set_mempolicy, 0, 0, 0));
	probe("set_mempolicy_home_node", syscall(SYS_set_mempolicy_home_node, page, 4096, 0, 0));
	probe("move_pages", syscall(SYS_move_pages, 0, 0, 0, 0, 0, 0));
	probe("migrate_pages", syscall(SYS_migrate_pages, 0, 64, mask, mask));
	probe("memfd_secret", syscall(SYS_memfd_secret, 0));
	probe("io_setup", syscall(SYS_io_setup, 1, &ctx));
	probe("io_submit", syscall(SYS_io_submit, ctx, 0, 0));
	probe("io_getevents", syscall(SYS_io_getevents, ctx, 0, 0, 0, 0));
	probe("io_pgetevents", syscall(SYS_io_pgetevents, ctx, 0, 0, 0, 0, 0));
	probe("io_cancel", syscall(SYS_io_cancel, ctx, 0, 0));
	probe("io_destroy", syscall(SYS_io_destroy, ctx));
	probe("process_madvise", syscall(SYS_process_madvise, -1, 0, 0, 0, 0));
	probe("process_mrelease", syscall(SYS_process_mrelease, -1, 0));
	printf("done\n");
	return 0;
}`

// testDeniedCalls attacks the denial of the calls deniedCallsProbe makes:
// each must fail with EPERM.
func (s *suite) testDeniedCalls(t *testing.T) {
	if s.CC == "" {
		t.Skip("no C compiler given to build the probe")
	}
	spec := s.spec("/workspace/probe")
	spec.Files = []sandbox.File{{Path: "probe", Content: buildC(t, s.CC, deniedCallsProbe), Mode: 0o755}}
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if !bytes.HasSuffix(res.Stdout, []byte("done\n")) {
		t.Fatalf("probe did not finish\nstdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	}
	calls := 0
	for _, line := range strings.Split(strings.TrimSuffix(string(res.Stdout), "done\n"), "\n") {
		if line == "" {
			continue
		}
		calls++
		name, errno, _ := strings.Cut(line, " ")
		if errno != "1" {
			t.Errorf("%s: errno %s, want EPERM (1)", name, errno)
		}
	}
	if calls < 14 {
		t.Fatalf("probe made %d calls, want at least 14\nstdout: %s", calls, res.Stdout)
	}
}
