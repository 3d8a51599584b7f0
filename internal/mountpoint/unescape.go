package mountpoint

import (
	"strconv"
	"strings"
)

// Unescape decodes the octal escapes the kernel writes in the paths of
// /proc/self/mountinfo (\040 for a space, \011, \012, \134). A backslash
// not followed by three octal digits is kept as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
