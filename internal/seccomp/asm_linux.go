package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// label names a place in the program that jumps go to. Classic BPF only
// jumps forward, so a label must be marked after every jump to it. The
// constants below name the fixed blocks; newLabel hands out more, one per
// node of the dispatch tree.
type label int

const (
	next label = iota // fall through to the following instruction
	lblAllow
	lblEPERM
	lblENOSYS
	lblEAFNOSUPPORT
	lblKill
	lblClone
	lblIoctl
	lblPersonality
	lblSocket
	firstFreeLabel // first label newLabel may return
)

// asm assembles a classic BPF program whose jumps name labels instead of
// offsets, so that adding a system call to the policy cannot leave a
// miscounted offset behind.
type asm struct {
	insns  []insn
	labels map[label]int
	// free is the next label newLabel returns, once past firstFreeLabel.
	free label
	// remarked lists labels marked more than once, which assemble refuses:
	// jumps to them would silently go to the last mark only.
	remarked []label
}

type insn struct {
	f      unix.SockFilter
	jt, jf label
	ja     label // target of an unconditional jump
}

func (p *asm) emit(code uint16, k uint32, jt, jf label) {
	p.insns = append(p.insns, insn{f: unix.SockFilter{Code: code, K: k}, jt: jt, jf: jf})
}

func (p *asm) load(off uint32) { p.emit(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off, next, next) }
func (p *asm) ret(k uint32)    { p.emit(unix.BPF_RET|unix.BPF_K, k, next, next) }

func (p *asm) jeq(k uint32, jt, jf label) { p.emit(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, k, jt, jf) }
func (p *asm) jge(k uint32, jt, jf label) { p.emit(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, k, jt, jf) }

func (p *asm) jset(k uint32, jt, jf label) {
	p.emit(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, k, jt, jf)
}

// oneOf jumps to in if the accumulator equals one of values, else to out:
// one comparison per value, the last of which jumps to out itself.
func (p *asm) oneOf(values []uint32, in, out label) {
	if len(values) == 0 {
		p.jump(out)
		return
	}
	for _, v := range values[:len(values)-1] {
		p.jeq(v, in, next)
	}
	p.jeq(values[len(values)-1], in, out)
}

func (p *asm) jump(to label) {
	p.insns = append(p.insns, insn{f: unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA}, ja: to})
}

// newLabel returns a label no other part of the program uses.
func (p *asm) newLabel() label {
	p.free = max(p.free, firstFreeLabel)
	l := p.free
	p.free++
	return l
}

func (p *asm) mark(l label) {
	if p.labels == nil {
		p.labels = make(map[label]int)
	}
	if _, ok := p.labels[l]; ok {
		p.remarked = append(p.remarked, l)
	}
	p.labels[l] = len(p.insns)
}

// assemble resolves labels to offsets. It fails rather than emit a program
// the kernel would reject or that would jump somewhere unintended.
func (p *asm) assemble() ([]unix.SockFilter, error) {
	if len(p.insns) > bpfMaxInsns {
		return nil, fmt.Errorf("program has %d instructions, more than %d", len(p.insns), bpfMaxInsns)
	}
	if len(p.remarked) > 0 {
		return nil, fmt.Errorf("label %d marked twice", p.remarked[0])
	}
	offset := func(at int, to label) (int, error) {
		if to == next {
			return 0, nil
		}
		target, ok := p.labels[to]
		if !ok {
			return 0, fmt.Errorf("instruction %d jumps to unmarked label %d", at, to)
		}
		off := target - (at + 1)
		if off < 0 {
			return 0, fmt.Errorf("instruction %d jumps backwards to label %d", at, to)
		}
		return off, nil
	}
	prog := make([]unix.SockFilter, len(p.insns))
	for i, in := range p.insns {
		f := in.f
		if f.Code == unix.BPF_JMP|unix.BPF_JA {
			off, err := offset(i, in.ja)
			if err != nil {
				return nil, err
			}
			f.K = uint32(off)
		} else {
			jt, err := offset(i, in.jt)
			if err != nil {
				return nil, err
			}
			jf, err := offset(i, in.jf)
			if err != nil {
				return nil, err
			}
			if jt > 255 || jf > 255 {
				return nil, fmt.Errorf("instruction %d jumps %d/%d instructions, more than a conditional jump can encode", i, jt, jf)
			}
			f.Jt, f.Jf = uint8(jt), uint8(jf)
		}
		prog[i] = f
	}
	return prog, nil
}
