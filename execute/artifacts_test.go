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

func TestCollectArtifactsLimits(t *testing.T) {
	mk := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for rel, content := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	deep := strings.Repeat("d/", 10) + "f.txt"
	for _, tc := range []struct {
		name      string
		files     map[string]string
		lim       ArtifactLimits
		want      []string
		noSumFrom string // artifacts from this path on have no checksum
	}{
		{"depth", map[string]string{"a.txt": "1", deep: "2"}, ArtifactLimits{MaxDepth: 5}, []string{"a.txt"}, ""},
		{"deep enough", map[string]string{deep: "2"}, ArtifactLimits{MaxDepth: 20}, []string{deep}, ""},
		{"files", map[string]string{"a": "", "b": "", "c": ""}, ArtifactLimits{MaxFiles: 2}, []string{"a", "b"}, ""},
		{"entries", map[string]string{"a": "", "b": "", "c": "", "d": ""}, ArtifactLimits{MaxEntries: 2}, nil, ""},
		{"hash budget", map[string]string{"a.csv": "12345", "b.csv": "67890"}, ArtifactLimits{MaxHashBytes: 7}, []string{"a.csv", "b.csv"}, "b.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arts, err := CollectArtifactsWith(mk(t, tc.files), nil, tc.lim)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, a := range arts {
				paths = append(paths, a.Path)
				noSum := tc.noSumFrom != "" && a.Path >= tc.noSumFrom
				if (a.Checksum == "") != noSum {
					t.Errorf("%s: checksum %q, want empty: %v", a.Path, a.Checksum, noSum)
				}
				if a.MimeType == "" {
					t.Errorf("%s: no mime type", a.Path)
				}
			}
			if !slices.Equal(paths, tc.want) {
				t.Errorf("artifacts %v, want %v", paths, tc.want)
			}
		})
	}
}

func TestMimeType(t *testing.T) {
	for _, tc := range []struct{ name, head, want string }{
		{"out.csv", "a,b", "text/csv"},
		{"REPORT.PDF", "%PDF-1.4", "application/pdf"},
		{"data.json", "{}", "application/json"},
		{"page.html", "<html>", "text/html"},
		{"noext", "%PDF-1.7 rest", "application/pdf"},
		{"noext", "hello world", "text/plain"},
		{"noext", "\x89PNG\r\n\x1a\n", "image/png"},
		{"x.unknownext", "\x00\x01", "application/octet-stream"},
	} {
		if got := mimeType(tc.name, []byte(tc.head)); got != tc.want {
			t.Errorf("mimeType(%q, %q) = %q, want %q", tc.name, tc.head, got, tc.want)
		}
	}
}

func TestCollectArtifactsSwappedDir(t *testing.T) {
	// A directory replaced by a link to the host between listing and open
	// must not be entered: the link is seen as a link and skipped.
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/self/root/etc", filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	arts, err := CollectArtifacts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 0 {
		t.Errorf("artifacts through links: %+v", arts)
	}
}

func BenchmarkCollectArtifacts1000(b *testing.B) {
	dir := b.TempDir()
	for i := range 1000 {
		sub := filepath.Join(dir, "d"+strconv.Itoa(i%10))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "f"+strconv.Itoa(i)+".csv"), []byte(strings.Repeat("x,y\n", 256)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		arts, err := CollectArtifacts(dir, nil)
		if err != nil || len(arts) != 1000 {
			b.Fatalf("%d artifacts, %v", len(arts), err)
		}
	}
}
