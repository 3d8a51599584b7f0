package execute

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// TestFilesRefused: every refusal of a request's files is an error naming
// the field, before any sandbox runs.
func TestFilesRefused(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"dot dot", Request{Language: "script", Code: "x", Files: []multifile.File{{Path: "../x"}}}, "files[0].path"},
		{"over the code", Request{Language: "script", Code: "x", Files: []multifile.File{{Path: "main.sc"}}}, `files[0].path: "main.sc" is where code is written`},
		{"over the program", Request{Language: "native", Code: "x", Files: []multifile.File{{Path: "main"}}}, `files[0].path: "main" is where the compiled program is written`},
		{"no code, no entry", Request{Language: "script", Files: []multifile.File{{Path: "a.sc"}}}, "code is empty"},
		{"entry not a file", Request{Language: "script", Files: []multifile.File{{Path: "a.sc"}}, Entry: "b.sc"}, `entry: "b.sc" is not among files`},
		{"entry neither", Request{Language: "script", Code: "x", Entry: "b.sc"}, `entry: "b.sc" is neither among files nor "main.sc"`},
		{"too big", Request{Language: "script", Code: "x", Files: []multifile.File{{Path: "a", Content: strings.Repeat("a", multifile.MaxTotalBytes+1)}}}, "files[0].content"},
		{"artifacts", Request{Language: "script", Code: "x", Artifacts: ArtifactOptions{IncludeContent: true, MaxBytes: MaxArtifactContentBytes + 1}}, "max_bytes must be between"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fb, _ := newTest(t)
			_, err := e.Execute(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if !errors.Is(err, multifile.ErrInvalid) && !errors.Is(err, ErrEmptyCode) && !errors.Is(err, ErrInvalidArtifacts) {
				t.Errorf("error %v is of no refusal class", err)
			}
			if n := len(fb.Specs()); n != 0 {
				t.Errorf("%d sandbox runs for a refused request", n)
			}
		})
	}
}

// TestFilesInSpecs: the files go into the compile step of a compiled
// language, and into the run of an interpreted one, with the entry run.
func TestFilesInSpecs(t *testing.T) {
	e, fb, _ := newTest(t, sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}))
	res, err := e.Execute(context.Background(), Request{Language: "script", Entry: "app/run.sc", Files: []multifile.File{
		{Path: "app/run.sc", Content: "go"}, {Path: "tool", Content: "#!", Executable: true},
	}})
	if err != nil || res.Status != StatusSuccess {
		t.Fatalf("%v %+v", err, res)
	}
	spec := fb.Specs()[0]
	if got := spec.Args[len(spec.Args)-1]; got != "/workspace/app/run.sc" {
		t.Errorf("run argv %q does not run the entry", spec.Args)
	}
	if len(spec.Files) != 2 || spec.Files[1].Path != "tool" || spec.Files[1].Mode != 0o755 || spec.Files[0].Mode != 0o644 {
		t.Errorf("files %+v", spec.Files)
	}

	e, fb, _ = newTest(t, sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}), sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}))
	if _, err := e.Execute(context.Background(), Request{Language: "native", Code: "main", Files: []multifile.File{{Path: "lib.nc", Content: "lib"}}}); err != nil {
		t.Fatal(err)
	}
	compile, run := fb.Specs()[0], fb.Specs()[1]
	if len(compile.Files) != 2 || compile.Files[0].Path != "prog.nc" || compile.Files[1].Path != "lib.nc" {
		t.Errorf("compile files %+v", compile.Files)
	}
	if len(run.Files) != 0 {
		t.Errorf("the run writes %d files again over the compiled workspace", len(run.Files))
	}
}

// TestArtifactContents: contents come back in path order while they fit
// in the budget, each matching its checksum; a file that does not fit is
// listed without one, and a smaller one after it still fits.
func TestArtifactContents(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{'x'}, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", 40)
	write("b.bin", 70)
	write("c.txt", 50)
	write("own.src", 10)
	arts, err := CollectArtifactsWith(dir, func(rel string) bool { return rel == "own.src" }, ArtifactLimits{ContentBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*string{}
	for _, a := range arts {
		got[a.Path] = a.Content
		if a.Content == nil {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(*a.Content)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if a.Checksum != "sha256:"+hex.EncodeToString(sum[:]) || int64(len(b)) != a.Size {
			t.Errorf("%s: content does not match its checksum or size", a.Path)
		}
	}
	if len(got) != 3 || got["a.txt"] == nil || got["b.bin"] != nil || got["c.txt"] == nil {
		t.Errorf("contents %v: want a.txt and c.txt within 100 bytes, not b.bin, not own.src", got)
	}
	arts, err = CollectArtifactsWith(dir, nil, ArtifactLimits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arts {
		if a.Content != nil {
			t.Errorf("%s has content without a budget", a.Path)
		}
	}
}

func TestArtifactOptions(t *testing.T) {
	for opts, want := range map[ArtifactOptions][1]int64{
		{}:                                  {0},
		{MaxBytes: 5}:                       {0},
		{IncludeContent: true}:              {DefaultArtifactContentBytes},
		{IncludeContent: true, MaxBytes: 5}: {5},
	} {
		if got := opts.contentBytes(); got != want[0] {
			t.Errorf("%+v: %d bytes, want %d", opts, got, want[0])
		}
	}
	for _, bad := range []int64{-1, MaxArtifactContentBytes + 1} {
		if err := (ArtifactOptions{IncludeContent: true, MaxBytes: bad}).Validate(); !errors.Is(err, ErrInvalidArtifacts) {
			t.Errorf("max_bytes %d: %v", bad, err)
		}
	}
}
