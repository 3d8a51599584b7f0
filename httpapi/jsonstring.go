package httpapi

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// appendJSONString appends b as a JSON string, as encoding/json writes a
// string without HTML escaping: each byte that is not UTF-8 becomes
// \ufffd, control characters and U+2028/U+2029 are escaped (the latter
// so that the text stays one line for JavaScript too). It reads b in
// place, where encoding/json would first need it copied into a string,
// and copies runs that need no escaping whole: an event stream's chunks
// are as large as a program's output.
func appendJSONString(dst, b []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, b[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, b[start:]...)
	return append(dst, '"')
}
