package lang

import (
	"errors"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	tests := []struct{ name, id string }{
		{"python", "python"}, {"PY", "python"}, {"python3", "python3"}, {"Python3", "python3"},
		{"c", "c"}, {"C++", "cpp"}, {"cpp", "cpp"}, {"java", "java"},
		{"js", "javascript"}, {"node", "javascript"}, {"JavaScript", "javascript"},
		{"golang", "go"}, {"rs", "rust"}, {"shell", "bash"}, {"sh", "bash"}, {" bash ", "bash"},
	}
	for _, tt := range tests {
		l, err := Default().Lookup(tt.name)
		if err != nil {
			t.Errorf("Lookup(%q): %v", tt.name, err)
			continue
		}
		if l.ID != tt.id {
			t.Errorf("Lookup(%q).ID = %q, want %q", tt.name, l.ID, tt.id)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"cobol", "", "pyth"} {
		_, err := Default().Lookup(name)
		if !errors.Is(err, ErrUnknownLanguage) {
			t.Fatalf("Lookup(%q): %v, want ErrUnknownLanguage", name, err)
		}
		if !strings.Contains(err.Error(), "bash, c, cpp, go, java, javascript, python, python3, rust") {
			t.Errorf("error %q does not list the known ids", err)
		}
	}
}

func TestForFile(t *testing.T) {
	tests := []struct{ file, id string }{
		{"a.py", "python"}, {"/x/y/Main.JAVA", "java"}, {"a.c", "c"}, {"a.cc", "cpp"}, {"a.cpp", "cpp"},
		{"a.js", "javascript"}, {"a.go", "go"}, {"a.rs", "rust"}, {"run.sh", "bash"}, {"x.bash", "bash"},
		{"a.tar.gz", ""}, {"Makefile", ""}, {".py", "python"}, {"", ""},
	}
	for _, tt := range tests {
		l, err := Default().ForFile(tt.file)
		switch {
		case tt.id == "" && !errors.Is(err, ErrUnknownLanguage):
			t.Errorf("ForFile(%q) = %v, %v; want ErrUnknownLanguage", tt.file, l, err)
		case tt.id != "" && (err != nil || l.ID != tt.id):
			t.Errorf("ForFile(%q) = %v, %v; want %s", tt.file, l, err, tt.id)
		}
	}
}

func TestAllSorted(t *testing.T) {
	all := Default().All()
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Fatalf("All() not sorted: %s before %s", all[i-1].ID, all[i].ID)
		}
	}
	// All returns a copy: changing it does not change the table.
	all[0] = nil
	if Default().All()[0] == nil {
		t.Fatal("All() exposes the table's slice")
	}
}
