package seccomp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMarshal(t *testing.T) {
	prog := []unix.SockFilter{
		{Code: 0x20, Jt: 0, Jf: 0, K: 4},
		{Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e},
		{Code: 0x06, K: 0x7fff0000},
	}
	// struct sock_filter on a little-endian machine: code (2 bytes), jt, jf,
	// k (4 bytes).
	wantLE := []byte{
		0x20, 0x00, 0, 0, 0x04, 0x00, 0x00, 0x00,
		0x15, 0x00, 1, 2, 0x3e, 0x00, 0x00, 0xc0,
		0x06, 0x00, 0, 0, 0x00, 0x00, 0xff, 0x7f,
	}
	got := Marshal(prog)
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		if !bytes.Equal(got, wantLE) {
			t.Errorf("Marshal() = % x\nwant       % x", got, wantLE)
		}
	} else if len(got) != len(wantLE) {
		t.Errorf("Marshal() has %d bytes, want %d", len(got), len(wantLE))
	}
	if len(Marshal(nil)) != 0 {
		t.Error("Marshal(nil) is not empty")
	}
}

// TestMarshalRoundTrip decodes the bytes of each real filter back into
// instructions.
func TestMarshalRoundTrip(t *testing.T) {
	for _, goarch := range goarchs {
		prog, err := ProgramFor(goarch)
		if err != nil {
			t.Fatal(err)
		}
		b := Marshal(prog)
		if len(b) != 8*len(prog) {
			t.Fatalf("%s: %d bytes for %d instructions", goarch, len(b), len(prog))
		}
		for i, f := range prog {
			w := b[8*i:]
			got := unix.SockFilter{
				Code: binary.NativeEndian.Uint16(w),
				Jt:   w[2],
				Jf:   w[3],
				K:    binary.NativeEndian.Uint32(w[4:]),
			}
			if got != f {
				t.Errorf("%s: instruction %d decodes as %+v, want %+v", goarch, i, got, f)
			}
		}
	}
}
