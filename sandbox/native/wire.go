package native

import (
	"encoding/binary"
	"strconv"

	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// setup encodes the operations the sandbox init carries out, in order. The
// format is described in nsinit/nsinit.h: per operation its code, its
// argument count, then each argument as a length, the bytes and a NUL.
type setup struct {
	buf []byte
}

func (s *setup) head(code, argc int) {
	s.buf = binary.NativeEndian.AppendUint32(s.buf, uint32(code))
	s.buf = binary.NativeEndian.AppendUint32(s.buf, uint32(argc))
}

func (s *setup) arg(a []byte) {
	s.buf = binary.NativeEndian.AppendUint32(s.buf, uint32(len(a)))
	s.buf = append(s.buf, a...)
	s.buf = append(s.buf, 0)
}

func (s *setup) strArg(a string) {
	s.buf = binary.NativeEndian.AppendUint32(s.buf, uint32(len(a)))
	s.buf = append(s.buf, a...)
	s.buf = append(s.buf, 0)
}

func (s *setup) op(code int, args ...string) {
	s.head(code, len(args))
	for _, a := range args {
		s.strArg(a)
	}
}

func (s *setup) mkdir(path string, mode uint32, uid, gid int) {
	s.op(nsinit.OpMkdir, path, strconv.FormatUint(uint64(mode), 8), strconv.Itoa(uid), strconv.Itoa(gid))
}

func (s *setup) file(path string, content []byte, mode uint32, uid, gid int) {
	s.head(nsinit.OpFile, 5)
	s.strArg(path)
	s.arg(content)
	s.strArg(strconv.FormatUint(uint64(mode), 8))
	s.strArg(strconv.Itoa(uid))
	s.strArg(strconv.Itoa(gid))
}

func (s *setup) rlimit(resource int, soft, hard uint64) {
	s.op(nsinit.OpRlimit, strconv.Itoa(resource), strconv.FormatUint(soft, 10), strconv.FormatUint(hard, 10))
}

// frame prefixes one phase of the setup with its length.
func frame(ops []byte) []byte {
	return append(binary.NativeEndian.AppendUint32(make([]byte, 0, 4+len(ops)), uint32(len(ops))), ops...)
}
