package mcpserver

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/session"
)

func newFilesServer(t *testing.T) (*Server, *session.Store) {
	t.Helper()
	store, err := session.Open(session.Options{Dir: t.TempDir(), NoTmpfs: true, MaxFileBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default(), Files: store, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

func TestFileTools(t *testing.T) {
	s, store := newFilesServer(t)
	cs := connect(t, s, "memory", nil)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{ToolWriteFile, ToolReadFile, ToolListFiles} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not offered: %v", want, names)
		}
	}
	var wrote session.File
	res := call(t, cs, ToolWriteFile, map[string]any{"session_id": "s", "path": "in/data.txt", "content": "héllo\n"})
	if res.IsError {
		t.Fatalf("write_file: %s", text(res))
	}
	structuredInto(t, res, &wrote)
	if wrote.Path != "in/data.txt" || wrote.Size != 7 {
		t.Fatalf("write_file: %+v", wrote)
	}
	bin := []byte{0, 1, 0xff, 0xfe}
	if res := call(t, cs, ToolWriteFile, map[string]any{"session_id": "s", "path": "b.bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}); res.IsError {
		t.Fatalf("write_file base64: %s", text(res))
	}
	var got fileContent
	structuredInto(t, call(t, cs, ToolReadFile, map[string]any{"session_id": "s", "path": "in/data.txt"}), &got)
	if got.Encoding != "utf8" || got.Content != "héllo\n" || got.SHA256 != wrote.SHA256 {
		t.Fatalf("read_file text: %+v", got)
	}
	structuredInto(t, call(t, cs, ToolReadFile, map[string]any{"session_id": "s", "path": "b.bin"}), &got)
	if got.Encoding != "base64" || got.Content != base64.StdEncoding.EncodeToString(bin) || got.Size != 4 {
		t.Fatalf("read_file binary: %+v", got)
	}
	var list fileList
	structuredInto(t, call(t, cs, ToolListFiles, map[string]any{"session_id": "s"}), &list)
	if len(list.Files) != 2 || list.Files[0].Path != "b.bin" || list.Files[1] != wrote {
		t.Fatalf("list_files: %+v", list)
	}

	// A link a run planted is not followed.
	l, err := store.Acquire(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	l.Release()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{ToolReadFile, map[string]any{"session_id": "s", "path": "passwd"}, `argument "path"`},
		{ToolReadFile, map[string]any{"session_id": "s", "path": "../etc/passwd"}, `argument "path"`},
		{ToolReadFile, map[string]any{"session_id": "s", "path": "/etc/passwd"}, `argument "path"`},
		{ToolReadFile, map[string]any{"session_id": "s", "path": "missing"}, `argument "path"`},
		{ToolReadFile, map[string]any{"session_id": "other", "path": "a"}, `argument "session_id"`},
		{ToolReadFile, map[string]any{"session_id": "a/b", "path": "a"}, `argument "session_id"`},
		{ToolListFiles, map[string]any{"session_id": "other"}, `argument "session_id"`},
		{ToolWriteFile, map[string]any{"session_id": "s", "path": "x", "content": "a", "encoding": "rot13"}, `argument "encoding"`},
		{ToolWriteFile, map[string]any{"session_id": "s", "path": "x", "content": "***", "encoding": "base64"}, `argument "content"`},
		{ToolWriteFile, map[string]any{"session_id": "s", "path": "x", "content": strings.Repeat("a", 2048)}, `argument "content"`},
		{ToolWriteFile, map[string]any{"session_id": "s", "path": "a\x00b", "content": "a"}, `argument "path"`},
		{ToolWriteFile, map[string]any{"session_id": "s", "path": "x", "content": "a", "mode": "0777"}, "mode"},
	} {
		res := call(t, cs, tc.name, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: %v %s", tc.name, tc.args, res.IsError, text(res))
		}
	}
	if b, err := os.ReadFile("/etc/passwd"); err != nil || len(b) == 0 {
		t.Fatal("/etc/passwd")
	}
	// Another owner's session is not this one.
	other := session.WithOwner(ctx, "someone-else")
	if _, err := store.OpenFile(other, "s", "b.bin"); err == nil {
		t.Fatal("another owner read the file")
	}
}

// Without a Files the tools are not offered.
func TestFileToolsOff(t *testing.T) {
	s, _ := newServer(t)
	tools, err := connect(t, s, "memory", nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == ToolWriteFile || tool.Name == ToolReadFile || tool.Name == ToolListFiles {
			t.Errorf("%s offered without sessions", tool.Name)
		}
	}
}
