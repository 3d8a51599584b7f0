package execute

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestCollectArtifacts(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("main.py", "print(1)")
	write("output/result.csv", "a,b\n1,2\n")
	write("plots/summary.png", "\x89PNG\r\n\x1a\n rest")
	write("blob", "\x00\x01\x02")
	write("run.log", "started\n")
	write(".hidden_file.txt", "no")
	write(".cache/x/y.txt", "no")
	if err := os.Symlink(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	arts, err := CollectArtifacts(dir, func(rel string) bool { return rel == "main.py" })
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	byPath := map[string]Artifact{}
	for _, a := range arts {
		paths = append(paths, a.Path)
		byPath[a.Path] = a
	}
	if want := []string{"blob", "output/result.csv", "plots/summary.png", "run.log"}; !slices.Equal(paths, want) {
		t.Fatalf("artifacts %v, want %v", paths, want)
	}
	csv := byPath["output/result.csv"]
	sum := sha256.Sum256([]byte("a,b\n1,2\n"))
	if csv.Size != 8 || csv.Checksum != "sha256:"+hex.EncodeToString(sum[:]) || csv.Type != "artifact" {
		t.Errorf("csv artifact = %+v", csv)
	}
	if csv.CreatedAt.IsZero() {
		t.Error("created_at is zero")
	}
	if got := byPath["plots/summary.png"].MimeType; got != "image/png" {
		t.Errorf("png mime type %q", got)
	}
	if got := byPath["blob"].MimeType; got != "application/octet-stream" {
		t.Errorf("blob mime type %q, want sniffed application/octet-stream", got)
	}
	if got := byPath["run.log"].Type; got != "log" {
		t.Errorf("run.log type %q, want log", got)
	}
	for _, a := range arts {
		if strings.Contains(a.Path, "secret") {
			t.Errorf("followed a symlink out of the workspace: %+v", a)
		}
	}
}

func TestCollectArtifactsCap(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxArtifacts + 5 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	arts, err := CollectArtifacts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != MaxArtifacts {
		t.Errorf("%d artifacts, want the cap %d", len(arts), MaxArtifacts)
	}
}

func TestCollectArtifactsMissingDir(t *testing.T) {
	if _, err := CollectArtifacts(filepath.Join(t.TempDir(), "nope"), nil); err == nil {
		t.Error("no error for a missing workspace")
	}
}
