package lang

import (
	"regexp"
	"strings"
)

var (
	// A top-level type declaration in code whose comments and literals
	// were blanked: modifiers, the kind, and the name.
	typeDecl = regexp.MustCompile(`((?:\b(?:public|protected|private|abstract|static|final|strictfp|sealed|non-sealed)\s+)*)\b(class|interface|enum|record)\s+([\p{L}_$][\p{L}\p{N}_$]*)`)
	// A main method: static, void, named main, taking parameters.
	mainDecl = regexp.MustCompile(`\bstatic\b[^;{}()=]*\bvoid\s+main\s*\(`)
)

// JavaClass is the class a Java program runs as: the top-level class named
// by "public class X"; failing that, the top-level class that declares a
// static main method; failing that, Solution. Comments, string and
// character literals and text blocks are ignored, so "public class X" in
// a comment does not count.
func JavaClass(code string) string {
	src := blankJava(code)
	type decl struct {
		name       string
		public     bool
		start, end int // the body, between its braces
	}
	var decls []decl
	depth := 0
	pos := 0
	for pos < len(src) {
		// Find the next top-level declaration, tracking brace depth up to it.
		m := typeDecl.FindStringSubmatchIndex(src[pos:])
		if m == nil {
			break
		}
		start := pos + m[0]
		depth += braceDelta(src[pos:start])
		name := src[pos+m[6] : pos+m[7]]
		mods := src[pos+m[2] : pos+m[3]]
		pos += m[1]
		if depth != 0 {
			continue
		}
		open := strings.IndexByte(src[pos:], '{')
		if open < 0 {
			break
		}
		bodyStart := pos + open + 1
		end := matchBrace(src, bodyStart)
		decls = append(decls, decl{name: name, public: hasWord(mods, "public"), start: bodyStart, end: end})
		pos = end + 1
	}
	for _, d := range decls {
		if d.public {
			return d.name
		}
	}
	for _, d := range decls {
		if mainDecl.MatchString(src[d.start:d.end]) {
			return d.name
		}
	}
	return DefaultClass
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

func braceDelta(s string) int {
	return strings.Count(s, "{") - strings.Count(s, "}")
}

// matchBrace returns the index of the brace closing the block that starts
// at from, or len(s) when it is never closed.
func matchBrace(s string, from int) int {
	depth := 1
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

// blankJava replaces comments, string and character literals and text
// blocks with spaces, keeping every other byte at its offset.
func blankJava(code string) string {
	b := []byte(code)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	for i := 0; i < len(b); {
		switch {
		case strings.HasPrefix(code[i:], "//"):
			end := strings.IndexByte(code[i:], '\n')
			if end < 0 {
				end = len(code) - i
			}
			blank(i, i+end)
			i += end
		case strings.HasPrefix(code[i:], "/*"):
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				end = len(code) - i - 2
			} else {
				end += 2
			}
			blank(i, i+2+end)
			i += 2 + end
		case strings.HasPrefix(code[i:], `"""`):
			end := closeQuote(code, i+3, `"""`)
			blank(i, end)
			i = end
		case code[i] == '"' || code[i] == '\'':
			end := closeQuote(code, i+1, code[i:i+1])
			blank(i, end)
			i = end
		default:
			i++
		}
	}
	return string(b)
}

// closeQuote returns the index just past the quote that closes a literal
// whose content starts at from, honouring backslash escapes. A plain
// literal also ends at a newline, as javac would reject it there.
func closeQuote(code string, from int, quote string) int {
	for i := from; i < len(code); i++ {
		switch {
		case code[i] == '\\':
			i++
		case code[i] == '\n' && len(quote) == 1:
			return i
		case strings.HasPrefix(code[i:], quote):
			return i + len(quote)
		}
	}
	return len(code)
}

// JVM sizing for {heap_mb}. The heap is what is left of the limit once the
// JVM's own memory (metaspace, code cache, thread stacks, the class data
// archive) is set aside, so that a program that fills its heap gets a Java
// OutOfMemoryError, which the judge reports as memory_exceeded, rather than
// a kill by the cgroup that says nothing.
const (
	// jvmReserveMB is the JVM's own memory outside the heap with the
	// serial collector and the C1 compiler only.
	jvmReserveMB = 40
	// jvmMinHeapMB is the smallest heap given, whatever the limit.
	jvmMinHeapMB = 8
)

// JVMHeapMB is the heap (-Xmx, {heap_mb}) of a JVM limited to memMB: the
// limit less the JVM's own 40 MB, at most 80 % of it, at least 8 MB.
func JVMHeapMB(memMB int) int {
	return max(jvmMinHeapMB, min(memMB*4/5, memMB-jvmReserveMB))
}
