package seccomp

import (
	"fmt"
	"maps"
	"slices"
)

// span is a run of consecutive system call numbers, lo to hi inclusive,
// that the filter sends to the same place.
type span struct {
	lo, hi uint32
	to     label
}

// spans cuts the whole range of numbers into maximal runs: each number in
// targets goes to its label, every other number to other. Neighbouring
// numbers with the same label share a run (io_uring_setup, _enter and
// _register, say), which takes one comparison fewer to find.
func spans(targets map[uint32]label, other label) []span {
	var ss []span
	add := func(lo, hi uint32, to label) {
		if n := len(ss); n > 0 && ss[n-1].to == to && ss[n-1].hi+1 == lo {
			ss[n-1].hi = hi
			return
		}
		ss = append(ss, span{lo, hi, to})
	}
	var from uint32 // first number not yet covered
	for _, nr := range slices.Sorted(maps.Keys(targets)) {
		if nr > from {
			add(from, nr-1, other)
		}
		add(nr, nr, targets[nr])
		from = nr + 1
	}
	if from != 0 || len(ss) == 0 { // from wraps to 0 only after ^uint32(0)
		add(from, ^uint32(0), other)
	}
	return ss
}

// dispatch emits a binary search on the accumulator, which holds the system
// call number, over ss, which must cover every number in order: it jumps to
// the label of the span holding the number. Each comparison halves the
// spans left, so every number is found in about log2(len(ss)) instructions
// instead of one per listed number, which matters twice: the kernel
// emulates the filter for every number when it is attached, and runs it on
// every call it cannot prove allowed.
//
// The leaves jump straight to the blocks after the tree, so a tree of more
// than about 250 instructions (some 200 spans) could not reach them with a
// conditional jump; assemble refuses such a program rather than emit it.
// The policy is far from that size.
func (p *asm) dispatch(ss []span) error {
	if len(ss) == 0 {
		return fmt.Errorf("no spans to dispatch on")
	}
	for i, s := range ss {
		if s.lo > s.hi || (i == 0 && s.lo != 0) || (i > 0 && s.lo != ss[i-1].hi+1) ||
			(i == len(ss)-1 && s.hi != ^uint32(0)) {
			return fmt.Errorf("spans do not cover every number in order at %d: %+v", i, s)
		}
	}
	if len(ss) == 1 {
		p.jump(ss[0].to)
		return nil
	}
	p.search(ss)
	return nil
}

// search emits the subtree for ss, of two spans or more. Both branches come
// after the comparison, so every jump goes forward as classic BPF demands.
func (p *asm) search(ss []span) {
	if len(ss) == 3 && ss[1].lo == ss[1].hi && ss[0].to == ss[2].to {
		// One number inside a run of the other label: a single JEQ
		// decides, where two range comparisons would be needed.
		p.jeq(ss[1].lo, ss[1].to, ss[0].to)
		return
	}
	low, high := ss[:len(ss)/2], ss[len(ss)/2:]
	lowAt, highAt := p.branch(low), p.branch(high)
	p.jge(high[0].lo, highAt, lowAt)
	if len(low) > 1 {
		p.mark(lowAt)
		p.search(low)
	}
	if len(high) > 1 {
		p.mark(highAt)
		p.search(high)
	}
}

// branch returns where to jump for ss: straight to its label when it is a
// single span, else to a fresh label for the subtree search will emit.
func (p *asm) branch(ss []span) label {
	if len(ss) == 1 {
		return ss[0].to
	}
	return p.newLabel()
}
