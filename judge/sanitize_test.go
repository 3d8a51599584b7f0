package judge

import (
	"slices"
	"testing"
)

func TestSanitizeCode(t *testing.T) {
	tests := []struct {
		name, code, language string
		wantCode             string
		wantFound            []string
	}{
		{"clean python", "print(1)", "python", "print(1)", nil},
		{"NUL bytes removed", "pri\x00nt(1)\x00", "cpp", "print(1)", nil},
		{"import os", "import os\nos.system('x')", "python", "import os\nos.system('x')", []string{`import\s+os`}},
		{"several patterns", "import subprocess, socket\n__import__ ('x')\nexec(c)\neval (c)", "python3",
			"import subprocess, socket\n__import__ ('x')\nexec(c)\neval (c)",
			[]string{`import\s+subprocess`, `__import__\s*\(`, `eval\s*\(`, `exec\s*\(`}},
		{"from os import", "from  os  import path", "py", "from  os  import path", []string{`from\s+os\s+import`}},
		{"open for writing", `open("f", 'w')`, "python", `open("f", 'w')`, []string{`open\s*\([^)]*['"][wa]`}},
		{"open for reading", `open("f")`, "python", `open("f")`, nil},
		{"patterns only matter for python", "eval(x); import os", "javascript", "eval(x); import os", nil},
		{"NUL hiding a pattern", "import\x00 os", "python", "import os", []string{`import\s+os`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, found := SanitizeCode(tt.code, tt.language)
			if code != tt.wantCode || !slices.Equal(found, tt.wantFound) {
				t.Errorf("SanitizeCode = %q, %q; want %q, %q", code, found, tt.wantCode, tt.wantFound)
			}
		})
	}
}
