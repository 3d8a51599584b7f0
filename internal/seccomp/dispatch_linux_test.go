package seccomp

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// maxDispatchPath bounds the instructions a call outside the argument
// checks runs, from the arch load to the return. A linear chain of
// comparisons, one per listed call, would run about 70.
const maxDispatchPath = 16

// numbersToCheck returns every number up to 1023, beyond the highest system
// call on either architecture, and numbers at the top of the range where
// off-by-one errors in the last spans would show.
func numbersToCheck() []uint32 {
	var nrs []uint32
	for nr := range uint32(1024) {
		nrs = append(nrs, nr)
	}
	for _, top := range []uint32{x32SyscallBit, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff} {
		nrs = append(nrs, top-1, top, top|39)
	}
	return nrs
}

// argSets are arguments that reach each branch of the argument checks, so
// that a number dispatched to the wrong block shows as a wrong verdict.
func argSets(goarch string) [][6]uint64 {
	a := archs[goarch]
	return [][6]uint64{
		{},
		{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)},
		{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), uint64(a.tiocsti)},
		{0x8, uint64(a.tioclinux)},
		{0x0400000, 0x5401}, // READ_IMPLIES_EXEC; TCGETS
		{uint64(unix.SIGCHLD), 0, 1, 2, 3, 4},
		{unix.AF_UNIX}, {unix.AF_INET}, {unix.AF_INET6}, {unix.AF_VSOCK, unix.AF_UNIX}, {unix.AF_NETLINK},
		{1<<32 | unix.AF_INET6}, {1<<32 | unix.AF_PACKET},
	}
}

// TestEveryNumberMatchesReference runs the filter on every number, under
// the native arch and another, with arguments that exercise every block,
// and compares the verdict with the policy written as plain Go.
func TestEveryNumberMatchesReference(t *testing.T) {
	for _, goarch := range goarchs {
		t.Run(goarch, func(t *testing.T) {
			vm := newVM(t, goarch)
			foreign := auditArchAARCH64
			if goarch == "arm64" {
				foreign = auditArchX86_64
			}
			for _, nr := range numbersToCheck() {
				for _, arch := range []uint32{archs[goarch].auditArch, uint32(foreign)} {
					for _, args := range argSets(goarch) {
						d := seccompData{nr: int32(nr), arch: arch, args: args}
						if got, want := run(t, vm, d), reference(goarch, d); got != want {
							t.Errorf("nr %d, arch %#x, args %#x: got %s, want %s",
								nr, arch, args, actionName(got), actionName(want))
						}
					}
				}
			}
		})
	}
}

// constVerdict runs prog for nr under arch the way the kernel's
// seccomp_is_const_allow (kernel/seccomp.c) does when it prepares the
// action cache: it gives up (constant false) at the first load of anything
// but nr or arch, or at an instruction it does not know. It also counts the
// instructions run.
func constVerdict(prog []unix.SockFilter, arch, nr uint32) (action uint32, steps int, constant bool) {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		f := prog[pc]
		steps++
		switch f.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch f.K {
			case offNr:
				acc = nr
			case offArch:
				acc = arch
			default:
				return 0, steps, false
			}
		case unix.BPF_RET | unix.BPF_K:
			return f.K, steps, true
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(f.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var taken bool
			switch f.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				taken = acc == f.K
			case unix.BPF_JGE:
				taken = acc >= f.K
			case unix.BPF_JGT:
				taken = acc > f.K
			case unix.BPF_JSET:
				taken = acc&f.K != 0
			}
			if taken {
				pc += int(f.Jt)
			} else {
				pc += int(f.Jf)
			}
		default:
			return 0, steps, false
		}
	}
	return 0, steps, false // ran off the end, which the kernel refuses anyway
}

// TestDispatchIsConstantAndShort checks the two properties the dispatch
// tree exists for. Every number but those with argument checks (clone,
// ioctl, personality, socket, socketpair) must reach its verdict without loading an argument,
// so the kernel can cache "always allowed" for it; and it must get there in
// at most maxDispatchPath instructions, so attaching and running the filter
// stay cheap. The calls with argument checks must load their arguments.
func TestDispatchIsConstantAndShort(t *testing.T) {
	for _, goarch := range goarchs {
		t.Run(goarch, func(t *testing.T) {
			prog, err := ProgramFor(goarch)
			if err != nil {
				t.Fatal(err)
			}
			a := archs[goarch]
			argChecked := []uint32{a.nr["clone"], a.nr["ioctl"], a.nr["personality"], a.nr["socket"], a.nr["socketpair"]}
			longest, longestNr, total, counted := 0, uint32(0), 0, 0
			for _, nr := range numbersToCheck() {
				action, steps, constant := constVerdict(prog, a.auditArch, nr)
				if slices.Contains(argChecked, nr) {
					if constant {
						t.Errorf("nr %d: verdict %s without looking at the arguments it must check", nr, actionName(action))
					}
					continue
				}
				if !constant {
					t.Errorf("nr %d: verdict depends on more than the number and arch (%d instructions run)", nr, steps)
					continue
				}
				d := seccompData{nr: int32(nr), arch: a.auditArch}
				if want := reference(goarch, d); action != want {
					t.Errorf("nr %d: constant verdict %s, want %s", nr, actionName(action), actionName(want))
				}
				total += steps
				counted++
				if steps > longest {
					longest, longestNr = steps, nr
				}
			}
			if longest > maxDispatchPath {
				t.Errorf("nr %d runs %d instructions, want at most %d", longestNr, longest, maxDispatchPath)
			}
			t.Logf("%s: %d instructions; paths without argument checks: longest %d (nr %d), mean %.1f",
				goarch, len(prog), longest, longestNr, float64(total)/float64(counted))
		})
	}
}

// TestDispatchSpans checks the cutting of the number range into runs on
// small, readable inputs, edges of the uint32 range included.
func TestDispatchSpans(t *testing.T) {
	tests := []struct {
		name    string
		targets map[uint32]label
		want    []span
	}{
		{"none", nil, []span{{0, ^uint32(0), lblAllow}}},
		{"one", map[uint32]label{5: lblEPERM},
			[]span{{0, 4, lblAllow}, {5, 5, lblEPERM}, {6, ^uint32(0), lblAllow}}},
		{"zero", map[uint32]label{0: lblEPERM},
			[]span{{0, 0, lblEPERM}, {1, ^uint32(0), lblAllow}}},
		{"top", map[uint32]label{^uint32(0): lblEPERM},
			[]span{{0, ^uint32(0) - 1, lblAllow}, {^uint32(0), ^uint32(0), lblEPERM}}},
		{"merged run", map[uint32]label{3: lblEPERM, 4: lblEPERM, 5: lblEPERM, 7: lblEPERM},
			[]span{{0, 2, lblAllow}, {3, 5, lblEPERM}, {6, 6, lblAllow}, {7, 7, lblEPERM}, {8, ^uint32(0), lblAllow}}},
		{"neighbours apart", map[uint32]label{3: lblEPERM, 4: lblClone},
			[]span{{0, 2, lblAllow}, {3, 3, lblEPERM}, {4, 4, lblClone}, {5, ^uint32(0), lblAllow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spans(tt.targets, lblAllow); !slices.Equal(got, tt.want) {
				t.Errorf("spans = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDispatchFindsEverySpan assembles dispatch trees of many sizes,
// alternating labels, and checks in the VM that each span's edges and middle
// reach its label. A tree too large for conditional jumps to reach the
// shared blocks after it must be refused by assemble, not miscompiled.
func TestDispatchFindsEverySpan(t *testing.T) {
	rets := []struct {
		l label
		k uint32
	}{{lblAllow, retAllow}, {lblEPERM, retEPERM}, {lblENOSYS, retENOSYS}}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 65, 100, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Every third target is a run of two; the rest are single
			// numbers, so the JEQ shortcut and range splits both occur.
			targets := make(map[uint32]label)
			for i := range n {
				nr := uint32(10 + 4*i)
				targets[nr] = rets[1+i%2].l
				if i%3 == 0 {
					targets[nr+1] = rets[1+i%2].l
				}
			}
			ss := spans(targets, lblAllow)
			var p asm
			p.load(offNr)
			if err := p.dispatch(ss); err != nil {
				t.Fatal(err)
			}
			for _, r := range rets {
				p.mark(r.l)
				p.ret(r.k)
			}
			prog, err := p.assemble()
			if n >= 200 {
				if err == nil || !strings.Contains(err.Error(), "more than a conditional jump") {
					t.Fatalf("assemble() error = %v for %d spans, want a jump out of range", err, len(ss))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vm := loadVM(t, prog)
			for _, s := range ss {
				want := uint32(retAllow)
				for _, r := range rets {
					if r.l == s.to {
						want = r.k
					}
				}
				for _, nr := range []uint32{s.lo, s.lo + (s.hi-s.lo)/2, s.hi} {
					if got := run(t, vm, seccompData{nr: int32(nr)}); got != want {
						t.Errorf("nr %d in span %+v: got %s, want %s", nr, s, actionName(got), actionName(want))
					}
				}
			}
		})
	}
}

func TestDispatchRejectsBadSpans(t *testing.T) {
	tests := []struct {
		name string
		ss   []span
	}{
		{"empty", nil},
		{"not from zero", []span{{1, ^uint32(0), lblAllow}}},
		{"not to the top", []span{{0, 5, lblAllow}}},
		{"gap", []span{{0, 5, lblAllow}, {7, ^uint32(0), lblEPERM}}},
		{"overlap", []span{{0, 5, lblAllow}, {5, ^uint32(0), lblEPERM}}},
		{"reversed", []span{{0, 5, lblAllow}, {9, 6, lblEPERM}, {7, ^uint32(0), lblAllow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p asm
			if err := p.dispatch(tt.ss); err == nil {
				t.Errorf("dispatch(%+v) succeeded", tt.ss)
			}
		})
	}
}
