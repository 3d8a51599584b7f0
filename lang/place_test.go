package lang

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
)

func files(paths ...string) []sandbox.File {
	out := make([]sandbox.File, len(paths))
	for i, p := range paths {
		out[i] = sandbox.File{Path: p, Content: []byte("// " + p), Mode: 0o644}
	}
	return out
}

func TestPlaceSources(t *testing.T) {
	tests := []struct {
		lang    string
		src     multifile.Source
		sources []string
		project bool
		args    []string // expected in the compile argv, in order
	}{
		{
			lang: "c", src: multifile.Source{Code: "int main;", Files: files("z.c", "lib/a.c", "util.h", "notes.txt")},
			sources: []string{"main.c", "lib/a.c", "z.c"},
			args:    []string{"-o", "/workspace/main", "/workspace/main.c", "/workspace/lib/a.c", "/workspace/z.c", "-lm"},
		},
		{lang: "c", src: multifile.Source{Code: "int main;"}, sources: []string{"main.c"}, args: []string{"/workspace/main.c", "-lm"}},
		{
			lang: "cpp", src: multifile.Source{Files: files("app/main.cpp", "b.cc", "c.cxx", "d.c"), Entry: "app/main.cpp"},
			sources: []string{"app/main.cpp", "b.cc", "c.cxx"},
		},
		{
			lang: "go", src: multifile.Source{Code: "package main", Files: files("helper.go", "sub/x.go")},
			sources: []string{"main.go", "helper.go"},
			args:    []string{"build", "-o", "/workspace/main", "/workspace/main.go", "/workspace/helper.go"},
		},
		{
			lang: "go", src: multifile.Source{Code: "package main", Files: files("go.mod", "sub/x.go")},
			sources: []string{"main.go"}, project: true,
			args: []string{"build", "-o", "/workspace/main", "."},
		},
		{
			lang: "java", src: multifile.Source{Files: files("p/Main.java", "p/Util.java", "README"), Entry: "p/Main.java"},
			sources: []string{"p/Main.java", "p/Util.java"},
			args:    []string{"-d", "/workspace", "/workspace/p/Main.java", "/workspace/p/Util.java"},
		},
		{
			lang: "rust", src: multifile.Source{Code: "mod util; fn main() {}", Files: files("util.rs")},
			sources: []string{"main.rs"}, args: []string{"-o", "/workspace/main", "/workspace/main.rs"},
		},
		{lang: "python", src: multifile.Source{Files: files("app.py", "lib.py"), Entry: "app.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			l := lookup(t, tt.lang)
			p, err := l.Place(tt.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Sources, tt.sources) || p.Project != tt.project {
				t.Errorf("sources %v project %v, want %v %v", p.Sources, p.Project, tt.sources, tt.project)
			}
			if tt.args == nil {
				return
			}
			args := l.CompileArgs(p.Vars(sandbox.WorkspaceDir))
			if !containsRun(args, tt.args) {
				t.Errorf("compile argv %q lacks %q", args, tt.args)
			}
		})
	}
}

// containsRun reports whether want appears in args as a contiguous run.
func containsRun(args, want []string) bool {
	for i := 0; i+len(want) <= len(args); i++ {
		if slices.Equal(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func TestPlaceRefuses(t *testing.T) {
	tests := []struct {
		lang string
		src  multifile.Source
		want string
	}{
		{"c", multifile.Source{Files: files("util.h", "main.c"), Entry: "util.h"}, `entry: "util.h" is not a c source file`},
		{"c", multifile.Source{Code: "int main;", Files: files("main")}, `files[0].path: "main" is where the compiled program is written`},
		{"c", multifile.Source{Code: "int main;", Files: files("main.c")}, `files[0].path: "main.c" is where code is written`},
		{"go", multifile.Source{Code: "package main", Files: files("sub/main.go"), Entry: "sub/main.go"}, `entry: "sub/main.go" is not a go source file`},
		{"java", multifile.Source{Code: "public class Main {}", Files: files("Main.java")}, `files[0].path: "Main.java" is where code is written`},
		{"python", multifile.Source{Files: files("a.py")}, "entry: required when code is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := lookup(t, tt.lang).Place(tt.src, nil)
			var fe *multifile.Error
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	// The caller's own paths are refused too.
	_, err := lookup(t, "go").Place(multifile.Source{Code: "package main", Files: files(".gocache/x")},
		map[string]string{".gocache": "the build cache"})
	if err == nil || !strings.Contains(err.Error(), `".gocache" is the build cache`) {
		t.Fatalf("error %v", err)
	}
}

func TestPlaceJavaClass(t *testing.T) {
	l := lookup(t, "java")
	tests := []struct {
		name, code, entry string
		files             []sandbox.File
		class, run        string
	}{
		{name: "code", code: "public class Hello { public static void main(String[] a) {} }", class: "Hello"},
		{name: "code in a package", code: "// c\npackage a.b ;\npublic class Hello {}", class: "a.b.Hello"},
		{
			name: "entry's class", entry: "p/App.java", class: "p.App",
			files: []sandbox.File{
				{Path: "p/App.java", Content: []byte("/* package x; */ package p;\nclass App { public static void main(String[] a) {} }")},
				{Path: "p/Lib.java", Content: []byte("package p; public class Lib {}")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := l.Place(multifile.Source{Code: tt.code, Files: tt.files, Entry: tt.entry}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Class != tt.class {
				t.Errorf("class %q, want %q", p.Class, tt.class)
			}
			if args := l.RunArgs(p.Vars(sandbox.WorkspaceDir)); args[len(args)-1] != tt.class {
				t.Errorf("run argv %q does not end with the class", args)
			}
		})
	}
}

func TestIsSource(t *testing.T) {
	l := &Language{Sources: []string{"*.go", "**/*.c"}}
	for rel, want := range map[string]bool{
		"main.go": true, "sub/x.go": false, "x.c": true, "a/b/c.c": true, "x.h": false, "c": false,
	} {
		if got := l.IsSource(rel); got != want {
			t.Errorf("IsSource(%q) = %v", rel, got)
		}
	}
}
