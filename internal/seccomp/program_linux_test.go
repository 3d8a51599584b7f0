package seccomp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestProgramForUnsupportedArch(t *testing.T) {
	for _, goarch := range []string{"386", "arm", "riscv64", "s390x", "", "AMD64"} {
		prog, err := ProgramFor(goarch)
		if !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("ProgramFor(%q) error = %v, want ErrUnsupportedArch", goarch, err)
		}
		if prog != nil {
			t.Errorf("ProgramFor(%q) returned a program with its error", goarch)
		}
	}
}

func TestProgramIsBuildArch(t *testing.T) {
	got, err := Program()
	want, wantErr := ProgramFor(runtime.GOARCH)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Program() error = %v, ProgramFor(%s) error = %v", err, runtime.GOARCH, wantErr)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Program() differs from ProgramFor(%q)", runtime.GOARCH)
	}
}

// TestProgramShape checks what the kernel demands of a seccomp program and
// what keeps it cheap: the arch check first, only aligned word loads inside
// seccomp_data, a return at the end.
func TestProgramShape(t *testing.T) {
	for _, goarch := range goarchs {
		prog, err := ProgramFor(goarch)
		if err != nil {
			t.Fatal(err)
		}
		if len(prog) == 0 || len(prog) > 255 {
			t.Errorf("%s: %d instructions, want a short program", goarch, len(prog))
		}
		if first := prog[0]; first.Code != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || first.K != offArch {
			t.Errorf("%s: first instruction %+v does not load the arch", goarch, first)
		}
		if last := prog[len(prog)-1]; last.Code != unix.BPF_RET|unix.BPF_K {
			t.Errorf("%s: last instruction %+v is not a return", goarch, last)
		}
		for i, f := range prog {
			switch f.Code {
			case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
				if f.K%4 != 0 || f.K >= 64 {
					t.Errorf("%s: instruction %d loads offset %d", goarch, i, f.K)
				}
			case unix.BPF_RET | unix.BPF_K:
				if !slices.Contains([]uint32{retAllow, retEPERM, retENOSYS, retEAFNOSUPPORT, retKillProcess}, f.K) {
					t.Errorf("%s: instruction %d returns %#x", goarch, i, f.K)
				}
			case unix.BPF_JMP | unix.BPF_JA, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K,
				unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			default:
				t.Errorf("%s: instruction %d has unexpected opcode %#x", goarch, i, f.Code)
			}
		}
	}
}

// TestGolden keeps a readable listing of each filter in testdata, so that a
// change to the policy shows up in review as a diff of the program itself.
// Run with -update after an intended change.
func TestGolden(t *testing.T) {
	for _, goarch := range goarchs {
		t.Run(goarch, func(t *testing.T) {
			prog, err := ProgramFor(goarch)
			if err != nil {
				t.Fatal(err)
			}
			got := listing(prog)
			path := filepath.Join("testdata", goarch+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("program for %s differs from %s; run with -update if intended\ngot:\n%s", goarch, path, got)
			}
		})
	}
}

func listing(prog []unix.SockFilter) string {
	var b strings.Builder
	for i, f := range prog {
		ins := bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
		fmt.Fprintf(&b, "%3d  %-40v  code=%#04x jt=%d jf=%d k=%#x\n", i, ins, f.Code, f.Jt, f.Jf, f.K)
	}
	return b.String()
}

func TestDeniedSyscalls(t *testing.T) {
	if got, want := DeniedSyscalls(), deniedSyscallsFor(runtime.GOARCH); !slices.Equal(got, want) {
		t.Errorf("DeniedSyscalls() = %v, want the list for %s, %v", got, runtime.GOARCH, want)
	}
	tests := []struct {
		goarch      string
		has, hasNot []string
	}{
		{"amd64", []string{"mount", "io_uring_setup", "unshare", "iopl", "ioperm", "_sysctl", "open_tree_attr",
			"modify_ldt", "mbind", "get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages",
			"move_pages", "memfd_secret", "io_setup", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
			"io_destroy", "process_madvise", "process_mrelease"},
			[]string{"clone", "clone3", "ioctl", "personality", "execve", "socket", "socketpair"}},
		{"arm64", []string{"mount", "io_uring_setup", "unshare", "nfsservctl", "mbind", "memfd_secret", "io_setup",
			"io_pgetevents", "set_mempolicy_home_node"},
			[]string{"iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl", "clone3", "modify_ldt", "socket"}},
	}
	for _, tt := range tests {
		got := deniedSyscallsFor(tt.goarch)
		if !slices.IsSorted(got) {
			t.Errorf("%s: list not sorted: %v", tt.goarch, got)
		}
		if len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%s: list has duplicates: %v", tt.goarch, got)
		}
		for _, name := range tt.has {
			if !slices.Contains(got, name) {
				t.Errorf("%s: %s missing from %v", tt.goarch, name, got)
			}
		}
		for _, name := range tt.hasNot {
			if slices.Contains(got, name) {
				t.Errorf("%s: %s should not be listed", tt.goarch, name)
			}
		}
	}
	if got := deniedSyscallsFor("riscv64"); got != nil {
		t.Errorf("unsupported arch: got %v, want nil", got)
	}
}

func TestAssembleRejectsBadJumps(t *testing.T) {
	tests := []struct {
		name  string
		build func(p *asm)
		want  string
	}{
		{"unmarked label", func(p *asm) {
			p.jeq(1, lblEPERM, next)
			p.ret(retAllow)
		}, "unmarked"},
		{"backward jump", func(p *asm) {
			p.mark(lblAllow)
			p.ret(retAllow)
			p.jeq(1, lblAllow, next)
			p.ret(retAllow)
		}, "backwards"},
		{"backward unconditional jump", func(p *asm) {
			p.mark(lblAllow)
			p.ret(retAllow)
			p.jump(lblAllow)
		}, "backwards"},
		{"conditional jump too far", func(p *asm) {
			p.jeq(1, lblEPERM, next)
			for range 256 {
				p.load(offNr)
			}
			p.mark(lblEPERM)
			p.ret(retEPERM)
		}, "more than a conditional jump"},
		{"label marked twice", func(p *asm) {
			p.jeq(1, lblEPERM, next)
			p.mark(lblEPERM)
			p.ret(retAllow)
			p.mark(lblEPERM)
			p.ret(retEPERM)
		}, "marked twice"},
		{"fresh label marked twice", func(p *asm) {
			l := p.newLabel()
			p.jeq(1, l, next)
			p.mark(l)
			p.ret(retAllow)
			p.mark(l)
			p.ret(retEPERM)
		}, "marked twice"},
		{"too many instructions", func(p *asm) {
			for range bpfMaxInsns + 1 {
				p.ret(retAllow)
			}
		}, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p asm
			tt.build(&p)
			_, err := p.assemble()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("assemble() error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestNewLabelIsFresh(t *testing.T) {
	var p asm
	seen := make(map[label]bool)
	for l := next; l < firstFreeLabel; l++ {
		seen[l] = true
	}
	for range 1000 {
		l := p.newLabel()
		if seen[l] {
			t.Fatalf("newLabel returned %d twice or a fixed label", l)
		}
		seen[l] = true
	}
}

func TestAssembleResolvesLabels(t *testing.T) {
	var p asm
	p.load(offNr)            // 0
	p.jeq(7, lblEPERM, next) // 1: jt must skip 2 instructions
	p.jump(lblAllow)         // 2: k must skip 1
	p.mark(lblClone)
	p.ret(retENOSYS) // 3
	p.mark(lblAllow)
	p.ret(retAllow) // 4
	p.mark(lblEPERM)
	p.ret(retEPERM) // 5
	prog, err := p.assemble()
	if err != nil {
		t.Fatal(err)
	}
	if got := prog[1]; got.Jt != 3 || got.Jf != 0 {
		t.Errorf("jeq: jt=%d jf=%d, want 3 and 0", got.Jt, got.Jf)
	}
	if got := prog[2]; got.K != 1 {
		t.Errorf("ja: k=%d, want 1", got.K)
	}
	vm := loadVM(t, prog)
	for nr, want := range map[int32]uint32{7: retEPERM, 8: retAllow} {
		if got := run(t, vm, seccompData{nr: nr}); got != want {
			t.Errorf("nr %d: got %s, want %s", nr, actionName(got), actionName(want))
		}
	}
}

// TestOneOf checks the membership test the argument blocks use, for lists
// of every length it may get, in the VM.
func TestOneOf(t *testing.T) {
	for _, values := range [][]uint32{nil, {7}, {1, 2, 10}} {
		var p asm
		p.load(offNr)
		p.oneOf(values, lblAllow, lblEPERM)
		p.mark(lblAllow)
		p.ret(retAllow)
		p.mark(lblEPERM)
		p.ret(retEPERM)
		prog, err := p.assemble()
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 + max(len(values), 1) + 1; len(prog) != want {
			t.Errorf("%v: %d instructions, want %d", values, len(prog), want)
		}
		vm := loadVM(t, prog)
		for nr := range uint32(12) {
			want := retEPERM
			if slices.Contains(values, nr) {
				want = retAllow
			}
			if got := run(t, vm, seccompData{nr: int32(nr)}); got != want {
				t.Errorf("%v: nr %d: got %s, want %s", values, nr, actionName(got), actionName(want))
			}
		}
	}
}
