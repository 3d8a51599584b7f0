package cli

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// programDir makes a directory of files: name -> content; a name ending
// in "*" is made executable.
func programDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunDirectory(t *testing.T) {
	dir := programDir(t, map[string]string{
		"main.fk": "ls", "data/in.txt": "x", "tool.sh*": "#!/bin/sh", "bin.dat": "\xff\x00",
		".git/config": "hidden", ".env": "SECRET=1",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	ta := newApp(t, "")
	if code := ta.run("run", dir); code != 0 {
		t.Fatalf("exit %d stderr %q", code, ta.stderr)
	}
	if got := ta.stdout.String(); got != "bin.dat\ndata\ntool.sh\n" {
		t.Errorf("the program saw %q: hidden files, links or others wrong", got)
	}
	files := map[string]os.FileMode{}
	for _, f := range ta.fake.Last().Files {
		files[f.Path] = f.Mode
		if f.Path == "bin.dat" && string(f.Content) != "\xff\x00" {
			t.Errorf("binary content %q", f.Content)
		}
	}
	if len(files) != 4 || files["tool.sh"] != 0o755 || files["data/in.txt"] != 0o644 {
		t.Errorf("files %v", files)
	}
}

func TestRunSeveralFiles(t *testing.T) {
	dir := programDir(t, map[string]string{"main.fk": "print two", "helper.txt": "h"})
	ta := newApp(t, "")
	if code := ta.run("run", filepath.Join(dir, "main.fk"), filepath.Join(dir, "helper.txt")); code != 0 || ta.stdout.String() != "two\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, ta.stdout, ta.stderr)
	}
	if fs := ta.fake.Last().Files; len(fs) != 2 || fs[0].Path != "main.fk" || fs[1].Path != "helper.txt" {
		t.Errorf("files %+v", fs)
	}
}

func TestRunFilesRefused(t *testing.T) {
	two := programDir(t, map[string]string{"main.fk": "ls", "main.fkc": "x"})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no main", []string{"run", programDir(t, map[string]string{"a.fk": "ls"})}, "--entry: name the file to run"},
		{"two mains", []string{"run", two}, "found 2 main.<ext> files"},
		{"entry leaving", []string{"run", "--entry", "../x.fk", two}, `--entry: "../x.fk" leaves the workspace`},
		{"entry missing", []string{"run", "--entry", "b.fk", two}, `--entry: "b.fk" is not among the program's files`},
		{"same name twice", []string{"run", source(t, "main.fk", "ls"), source(t, "main.fk", "ls")}, `files[1].path: "main.fk" is given twice`},
		{"stdin among files", []string{"run", source(t, "main.fk", "ls"), "-"}, "- (the code on stdin) cannot be one of several files"},
		{"artifact bytes alone", []string{"run", "--artifact-max-bytes", "5", source(t, "main.fk", "ls")}, "--artifact-max-bytes: only with --artifact-content"},
		{"artifact bytes range", []string{"run", "--artifact-content", "--artifact-max-bytes", "-5", source(t, "main.fk", "ls")}, "--artifact-max-bytes: invalid artifacts options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newApp(t, "")
			if code := ta.run(tt.args...); code != 2 || !strings.Contains(ta.stderr.String(), tt.want) {
				t.Errorf("exit %d stderr %q, want 2 naming %q", code, ta.stderr, tt.want)
			}
			if ta.fake.Last() != nil {
				t.Error("a refused program ran")
			}
		})
	}
}

func TestRunArtifactContent(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("run", "--json", "--artifact-content", source(t, "main.fk", "touch out.txt")); code != 0 {
		t.Fatalf("exit %d stderr %q", code, ta.stderr)
	}
	var res struct {
		Artifacts []struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(ta.stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Content == nil || *res.Artifacts[0].Content != base64.StdEncoding.EncodeToString([]byte("out.txt")) {
		t.Errorf("artifacts %s", ta.stdout)
	}
}

func TestJudgeFilesRefused(t *testing.T) {
	dir := programDir(t, map[string]string{"main.fk": "cat", "lib/x.txt": "x"})
	tests := source(t, "tests.json", `[{"input":"7\n","expected_output":"7"}]`)
	ta := newApp(t, "")
	if code := ta.run("judge", "--tests", tests, "--entry", "nope.fk", dir); code != 2 || !strings.Contains(ta.stderr.String(), "--entry") {
		t.Errorf("exit %d stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "")
	if code := ta.run("judge", "--tests", tests, "--entry", "main.fk", source(t, "main.fk", "cat")); code != 2 || !strings.Contains(ta.stderr.String(), "--entry: only with") {
		t.Errorf("exit %d stderr %q", code, ta.stderr)
	}
}
