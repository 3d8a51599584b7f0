package judge

import (
	"regexp"
	"strings"
)

// suspiciousPython are dangerous-looking Python patterns. They are
// reported, never blocked: the sandbox is the defence, and refusing code on
// a regular expression only teaches users to obfuscate it.
var suspiciousPython = []*regexp.Regexp{
	regexp.MustCompile(`import\s+os`),
	regexp.MustCompile(`import\s+subprocess`),
	regexp.MustCompile(`import\s+socket`),
	regexp.MustCompile(`from\s+os\s+import`),
	regexp.MustCompile(`__import__\s*\(`),
	regexp.MustCompile(`eval\s*\(`),
	regexp.MustCompile(`exec\s*\(`),
	regexp.MustCompile(`open\s*\([^)]*['"][wa]`),
}

// SanitizeCode removes NUL bytes and returns
// the suspicious patterns the code matches (for Python and python3 only),
// which the judge logs as warnings. It never refuses code.
func SanitizeCode(code, language string) (sanitized string, suspicious []string) {
	sanitized = strings.ReplaceAll(code, "\x00", "")
	switch strings.ToLower(language) {
	case "python", "python3", "py":
		for _, re := range suspiciousPython {
			if re.MatchString(sanitized) {
				suspicious = append(suspicious, re.String())
			}
		}
	}
	return sanitized, suspicious
}
