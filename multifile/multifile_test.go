package multifile

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

func TestDecodeRefuses(t *testing.T) {
	many := make([]File, MaxFiles+1)
	for i := range many {
		many[i] = File{Path: "f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "/" + strings.Repeat("y", i/26+1)}
	}
	half := strings.Repeat("x", MaxTotalBytes/2+1)
	tests := []struct {
		name  string
		files []File
		field string
		in    string
	}{
		{"dot dot", []File{{Path: "ok.c"}, {Path: "../etc/passwd"}}, "files[1].path", "leaves the workspace"},
		{"dot dot alone", []File{{Path: ".."}}, "files[0].path", "leaves the workspace"},
		{"dot dot inside", []File{{Path: "a/../../b"}}, "files[0].path", "not clean"},
		{"absolute", []File{{Path: "/etc/passwd"}}, "files[0].path", "absolute"},
		{"empty", []File{{Path: ""}}, "files[0].path", "empty path"},
		{"dot", []File{{Path: "."}}, "files[0].path", "empty path"},
		{"trailing slash", []File{{Path: "dir/"}}, "files[0].path", "not clean"},
		{"double slash", []File{{Path: "a//b"}}, "files[0].path", "not clean"},
		{"NUL", []File{{Path: "a\x00b"}}, "files[0].path", "NUL"},
		{"newline", []File{{Path: "a\nb"}}, "files[0].path", "control character"},
		{"backslash", []File{{Path: `..\..\x`}}, "files[0].path", "backslash"},
		{"long path", []File{{Path: strings.Repeat("a/", MaxPathBytes/2) + "b"}}, "files[0].path", "at most"},
		{"long name", []File{{Path: strings.Repeat("n", MaxNameBytes+1)}}, "files[0].path", "a name of 256 bytes"},
		{"deep", []File{{Path: strings.Repeat("d/", MaxDepth) + "f"}}, "files[0].path", "levels deep"},
		{"invalid UTF-8 path", []File{{Path: "a\xffb"}}, "files[0].path", "UTF-8"},
		{"duplicate", []File{{Path: "a.c"}, {Path: "b.c"}, {Path: "a.c"}}, "files[2].path", "given twice (files[0])"},
		{"file and directory", []File{{Path: "lib"}, {Path: "lib/x.c"}}, "files[1].path", "which files[0] makes a file"},
		{"directory and file", []File{{Path: "lib/x.c"}, {Path: "lib"}}, "files[0].path", "which files[1] makes a file"},
		{"too many", many, "files", "at most 256"},
		{"too big", []File{{Path: "a", Content: half}, {Path: "b", Content: half}}, "files[1].content", "more than"},
		{"bad base64", []File{{Path: "a", Content: "not base64!", Encoding: "base64"}}, "files[0].content", "not valid base64"},
		{"base64 not canonical", []File{{Path: "a", Content: "aGVsbG9=", Encoding: "base64"}}, "files[0].content", "not valid base64"},
		{"huge base64", []File{{Path: "a", Content: strings.Repeat("A", MaxTotalBytes/3*4+8), Encoding: "base64"}}, "files[0].content", "more than"},
		{"unknown encoding", []File{{Path: "a", Encoding: "hex"}}, "files[0].encoding", `"hex" is not`},
		{"invalid UTF-8 content", []File{{Path: "a", Content: "\xff\xfe"}}, "files[0].content", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.files)
			var fe *Error
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want a *multifile.Error", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Reason, tt.in) {
				t.Errorf("error %q, want field %s and %q", err, tt.field, tt.in)
			}
			if !strings.HasPrefix(err.Error(), tt.field+": ") {
				t.Errorf("error %q does not start with its field", err)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	got, err := Decode([]File{
		{Path: "main.c", Content: "int main;"},
		{Path: "data/blob.bin", Content: base64.StdEncoding.EncodeToString([]byte{0, 1, 0xff}), Encoding: "base64"},
		{Path: "run.sh", Content: "#!/bin/sh\n", Encoding: "utf8", Executable: true},
		{Path: ".hidden", Content: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.File{
		{Path: "main.c", Content: []byte("int main;"), Mode: 0o644},
		{Path: "data/blob.bin", Content: []byte{0, 1, 0xff}, Mode: 0o644},
		{Path: "run.sh", Content: []byte("#!/bin/sh\n"), Mode: 0o755},
		{Path: ".hidden", Content: []byte{}, Mode: 0o644},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d files", len(got))
	}
	for i := range want {
		if got[i].Path != want[i].Path || string(got[i].Content) != string(want[i].Content) || got[i].Mode != want[i].Mode {
			t.Errorf("files[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := Decode(nil); got != nil || err != nil {
		t.Errorf("no files: %v, %v", got, err)
	}
	// Every decoded file passes the sandbox's own check of its spec.
	spec := sandbox.Spec{Args: []string{"/bin/true"}, Files: got, Limits: sandbox.Limits{}.WithDefaults()}
	if err := spec.Validate(); err != nil {
		t.Errorf("the sandbox refuses decoded files: %v", err)
	}
}

func TestResolve(t *testing.T) {
	files := []sandbox.File{{Path: "util.c", Content: []byte("u")}, {Path: "lib/x.c", Content: []byte("x")}}
	reserved := map[string]string{"main": "where the compiled program is written"}
	tests := []struct {
		name      string
		src       Source
		entry     string
		refused   string
		fileCount int
	}{
		{name: "code alone", src: Source{Code: "int main;"}, entry: "main.c", fileCount: 1},
		{name: "code and files", src: Source{Code: "int main;", Files: files}, entry: "main.c", fileCount: 3},
		{name: "entry among files", src: Source{Files: files, Entry: "lib/x.c"}, entry: "lib/x.c", fileCount: 2},
		{name: "entry naming code", src: Source{Code: "c", Files: files, Entry: "main.c"}, entry: "main.c", fileCount: 3},
		{name: "no code, no entry", src: Source{Code: "  ", Files: files}, refused: "entry: required when code is empty"},
		{name: "missing entry", src: Source{Files: files, Entry: "nope.c"}, refused: `entry: "nope.c" is not among files`},
		{name: "missing entry with code", src: Source{Code: "c", Entry: "nope.c"}, refused: `entry: "nope.c" is neither among files nor "main.c"`},
		{name: "entry leaving", src: Source{Files: files, Entry: "../x.c"}, refused: "entry: \"../x.c\" leaves the workspace"},
		{name: "entry absolute", src: Source{Files: files, Entry: "/etc/passwd"}, refused: "entry: \"/etc/passwd\" is absolute"},
		{
			name: "file over the code's", src: Source{Code: "c", Files: []sandbox.File{{Path: "lib/a.c"}, {Path: "main.c"}}},
			refused: `files[1].path: "main.c" is where code is written`,
		},
		{
			name: "file over the program", src: Source{Files: []sandbox.File{{Path: "main"}}, Entry: "main"},
			refused: `files[0].path: "main" is where the compiled program is written`,
		},
		{
			name: "file beneath the program", src: Source{Files: []sandbox.File{{Path: "main/x.c"}}, Entry: "main/x.c"},
			refused: `files[0].path: "main" is where the compiled program is written`,
		},
		{
			name: "file beneath the code's", src: Source{Code: "c", Files: []sandbox.File{{Path: "main.c/x"}}},
			refused: `files[0].path: "main.c" is where code is written`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay, err := Resolve(tt.src, "main.c", reserved)
			if tt.refused != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.refused) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v, want %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if lay.Entry != tt.entry || len(lay.Files) != tt.fileCount {
				t.Errorf("entry %q, %d files; want %q, %d", lay.Entry, len(lay.Files), tt.entry, tt.fileCount)
			}
		})
	}
}

func TestResolveReservedBeneathFile(t *testing.T) {
	// A reserved path beneath a file would turn the build's own write
	// into a write beneath a file of the request.
	_, err := Resolve(Source{Files: []sandbox.File{{Path: ".gocache"}}, Entry: ".gocache"}, "main.go",
		map[string]string{".gocache/x": "kept"})
	if err == nil || !strings.Contains(err.Error(), "would stand over") {
		t.Fatalf("error %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("a/b.c", "x", "", false, "../c", "y")
	f.Add("main", "AAE=", "base64", true, "main/x", "")
	f.Fuzz(func(t *testing.T, p1, c1, enc string, exe bool, p2, c2 string) {
		got, err := Decode([]File{{Path: p1, Content: c1, Encoding: enc, Executable: exe}, {Path: p2, Content: c2}})
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "files") {
				t.Fatalf("error %v names no field", err)
			}
			return
		}
		for _, f := range got {
			if err := sandbox.ValidRelativePath(f.Path); err != nil {
				t.Fatalf("accepted %q: %v", f.Path, err)
			}
			if strings.HasPrefix(f.Path, "..") || strings.Contains(f.Path, "/../") {
				t.Fatalf("accepted %q", f.Path)
			}
		}
		if got[0].Path == got[1].Path || strings.HasPrefix(got[1].Path, got[0].Path+"/") || strings.HasPrefix(got[0].Path, got[1].Path+"/") {
			t.Fatalf("accepted %q and %q", got[0].Path, got[1].Path)
		}
	})
}
