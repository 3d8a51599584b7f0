package execute_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

var (
	nativeOnce sync.Once
	nativeBe   *native.Backend
	nativeErr  error
)

// nativeExecutor is an executor on the native backend, shared by the
// package's real runs.
func nativeExecutor(t *testing.T) *execute.Executor {
	t.Helper()
	testutil.RequireRoot(t)
	nativeOnce.Do(func() { nativeBe, nativeErr = native.New(native.Options{}) })
	if nativeErr != nil {
		t.Fatalf("native backend unavailable: %v", nativeErr)
	}
	// A single run's Go build starts with an empty build cache: on a
	// loaded machine (the race detector, other suites) it needs more than
	// the default 30 s.
	slow := sandbox.Limits{WallTime: 180 * time.Second, CPUTime: 180 * time.Second}
	return execute.New(nativeBe, lang.Default(), execute.Options{TempDir: t.TempDir(), CompileLimits: slow})
}

// multiFilePrograms are programs of two files or more in each compiled
// language, each printing want only if every file was built into it.
var multiFilePrograms = []struct {
	name, language, code, entry, want string
	files                             []multifile.File
}{
	{
		name: "c", language: "c", want: "5\n",
		code: "#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"%d\\n\", add(2, 3)); return 0; }\n",
		files: []multifile.File{
			{Path: "util.h", Content: "int add(int, int);\n"},
			{Path: "lib/util.c", Content: "#include \"../util.h\"\nint add(int a, int b) { return a + b; }\n"},
		},
	},
	{
		name: "cpp", language: "cpp", want: "49\n",
		code:  "#include <iostream>\nint sq(int);\nint main() { std::cout << sq(7) << \"\\n\"; }\n",
		files: []multifile.File{{Path: "sq.cc", Content: "int sq(int x) { return x * x; }\n"}},
	},
	{
		name: "java with a package and no code", language: "java", entry: "app/Main.java", want: "hello java\n",
		files: []multifile.File{
			{Path: "app/Main.java", Content: "package app;\npublic class Main { public static void main(String[] a) { System.out.println(Helper.greet(\"java\")); } }\n"},
			{Path: "app/Helper.java", Content: "package app;\nclass Helper { static String greet(String s) { return \"hello \" + s; } }\n"},
		},
	},
	{
		name: "go package", language: "go", want: "go two files\n",
		code:  "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(helper() + \"\\n\") }\n",
		files: []multifile.File{{Path: "helper.go", Content: "package main\n\nfunc helper() string { return \"go two files\" }\n"}},
	},
	{
		name: "go module", language: "go", want: "42\n",
		code: "package main\n\nimport (\n\t\"os\"\n\n\t\"example.com/m/util\"\n)\n\nfunc main() { os.Stdout.WriteString(util.Twice(\"4\")) }\n",
		files: []multifile.File{
			{Path: "go.mod", Content: "module example.com/m\n\ngo 1.19\n"},
			{Path: "util/util.go", Content: "package util\n\nfunc Twice(s string) string { return s + \"2\\n\" }\n"},
		},
	},
	{
		name: "rust modules", language: "rust", want: "8\n",
		code:  "mod util;\nfn main() { println!(\"{}\", util::twice(4)); }\n",
		files: []multifile.File{{Path: "util.rs", Content: "pub fn twice(n: i32) -> i32 { n * 2 }\n"}},
	},
	{
		name: "python module", language: "python", entry: "app.py", want: "from a module\n",
		files: []multifile.File{
			{Path: "app.py", Content: "import helper\nprint(helper.text())\n"},
			{Path: "helper.py", Content: "def text():\n    return 'from a module'\n"},
		},
	},
	{
		name: "bash with an executable script", language: "bash", want: "helper says hi\n",
		code:  "./bin/helper.sh hi\n",
		files: []multifile.File{{Path: "bin/helper.sh", Content: "#!/bin/sh\necho helper says \"$1\"\n", Executable: true}},
	},
}

func TestMultiFileNative(t *testing.T) {
	e := nativeExecutor(t)
	for _, p := range multiFilePrograms {
		t.Run(p.name, func(t *testing.T) {
			res, err := e.Execute(context.Background(), execute.Request{
				Language: p.language, Code: p.code, Files: p.files, Entry: p.entry,
				Limits: execute.ExecutionLimits{TimeLimit: 10, MemoryLimit: 512},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != execute.StatusSuccess || res.Stdout != p.want {
				t.Fatalf("status %s stdout %q stderr %q message %q, want %q", res.Status, res.Stdout, res.Stderr, res.Message(), p.want)
			}
			for _, a := range res.Artifacts {
				for _, f := range p.files {
					if a.Path == f.Path {
						t.Errorf("the request's file %s is listed as an artifact", f.Path)
					}
				}
			}
		})
	}
}

// TestMultiFileNativeNotExecutable: a file not marked executable cannot
// be run as a program, so the bit the request gives is the one it gets.
func TestMultiFileNativeNotExecutable(t *testing.T) {
	e := nativeExecutor(t)
	res, err := e.Execute(context.Background(), execute.Request{
		Language: "bash", Code: "./helper.sh\n",
		Files: []multifile.File{{Path: "helper.sh", Content: "#!/bin/sh\necho ran\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != execute.StatusExecutionError || !strings.Contains(res.Stderr, "Permission denied") {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
}

// TestArtifactContentNative: the contents of what the program wrote come
// back in base64, within max_bytes, and only when asked for.
func TestArtifactContentNative(t *testing.T) {
	e := nativeExecutor(t)
	code := "printf 'hello' > small.txt\nprintf '\\000\\001\\002' > bin.dat\nhead -c 5000 /dev/zero > big.bin\n"
	run := func(opts execute.ArtifactOptions) map[string]*string {
		t.Helper()
		res, err := e.Execute(context.Background(), execute.Request{Language: "bash", Code: code, Artifacts: opts})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != execute.StatusSuccess {
			t.Fatalf("status %s stderr %q", res.Status, res.Stderr)
		}
		got := map[string]*string{}
		for _, a := range res.Artifacts {
			got[a.Path] = a.Content
		}
		if len(got) != 3 {
			t.Fatalf("artifacts %v", got)
		}
		return got
	}
	for path, c := range run(execute.ArtifactOptions{}) {
		if c != nil {
			t.Errorf("%s has content although none was asked for", path)
		}
	}
	got := run(execute.ArtifactOptions{IncludeContent: true, MaxBytes: 100})
	want := map[string]string{"small.txt": "hello", "bin.dat": "\x00\x01\x02"}
	for path, w := range want {
		if got[path] == nil {
			t.Fatalf("%s has no content", path)
		}
		b, err := base64.StdEncoding.DecodeString(*got[path])
		if err != nil || string(b) != w {
			t.Errorf("%s: content %q (%v), want %q", path, b, err, w)
		}
	}
	if got["big.bin"] != nil {
		t.Errorf("big.bin's 5000 bytes came back within max_bytes 100")
	}
}

// TestFilesNotWrittenThroughLinks: a session's workspace where an
// earlier run planted links (a directory link to a host directory, a
// file link to a host file) does not lead the request's files outside
// it.
func TestFilesNotWrittenThroughLinks(t *testing.T) {
	e := nativeExecutor(t)
	host := t.TempDir()
	victim := filepath.Join(host, "victim.txt")
	if err := os.WriteFile(victim, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := capws.NewKept(t.TempDir(), "links-", 16<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Remove() })
	ws := d.Path
	if err := os.Symlink(host, filepath.Join(ws, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(ws, "file.txt")); err != nil {
		t.Fatal(err)
	}
	res, err := e.Execute(context.Background(), execute.Request{
		Language: "bash", Code: "cat file.txt\n", Workspace: ws,
		Files: []multifile.File{{Path: "file.txt", Content: "mine"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "mine" {
		t.Errorf("file.txt reads %q (status %s, %s)", res.Stdout, res.Status, res.Message())
	}
	res, err = e.Execute(context.Background(), execute.Request{
		Language: "bash", Code: "cat dir/victim.txt\n", Workspace: ws,
		Files: []multifile.File{{Path: "dir/victim.txt", Content: "mine"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != execute.StatusSetupError || !strings.Contains(res.Message(), "dir/victim.txt") {
		t.Errorf("a file beneath a planted directory link: status %s stdout %q message %q, want a setup_error naming it",
			res.Status, res.Stdout, res.Message())
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "host" {
		t.Fatalf("the host file now reads %q (%v)", b, err)
	}
}
