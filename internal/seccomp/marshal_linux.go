package seccomp

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// sockFilterSize is sizeof(struct sock_filter): u16 code, u8 jt, u8 jf, u32 k.
const sockFilterSize = 8

// Marshal encodes a program as the kernel's struct sock_filter array, 8
// bytes per instruction in native byte order, for a process that installs it
// without Go (the native backend's C init).
func Marshal(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, len(prog)*sockFilterSize)
	for _, f := range prog {
		b = binary.NativeEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.NativeEndian.AppendUint32(b, f.K)
	}
	return b
}
