package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/config"
)

// copyFake writes the fake languages' configuration at path.
func copyFake(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fake.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConfigSearch runs commands without --config: the configuration is
// found in $XDG_CONFIG_HOME, else in the system directory, and doctor says
// which file it loaded and how it was found.
func TestConfigSearch(t *testing.T) {
	xdg := t.TempDir()
	userFile := filepath.Join(xdg, "coderunner", "config.yaml")
	copyFake(t, userFile)

	ta := newApp(t, "")
	copyFake(t, filepath.Join(ta.ConfigDir, "config.yaml"))
	base := ta.LookupEnv
	ta.LookupEnv = func(k string) (string, bool) {
		if k == "XDG_CONFIG_HOME" {
			return xdg, true
		}
		return base(k)
	}
	if code := ta.Run(context.Background(), []string{"doctor", "--json"}); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal(ta.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, ta.stdout)
	}
	if rep.Config.File != userFile || rep.Config.Via != "$XDG_CONFIG_HOME" {
		t.Errorf("config %+v, want %s from $XDG_CONFIG_HOME", rep.Config, userFile)
	}
	// The fake language comes from the file found.
	if !hasLang(rep.Languages, "fake", true) {
		t.Errorf("languages %+v lack the fake of %s", rep.Languages, userFile)
	}

	if err := os.Remove(userFile); err != nil {
		t.Fatal(err)
	}
	recorded := filepath.Join(ta.ConfigDir, config.ImagesFile)
	if err := os.WriteFile(recorded, []byte("languages:\n  python: {image: \"local/core:1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ta.stdout.Reset()
	if code := ta.Run(context.Background(), []string{"doctor"}); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	want := "Configuration: " + filepath.Join(ta.ConfigDir, "config.yaml") + " (from " + ta.ConfigDir + ")\n" +
		"Docker images recorded by scripts/build-images.sh: " + recorded + "\n"
	if !strings.HasPrefix(ta.stdout.String(), want) {
		t.Errorf("doctor output starts\n%s\nwant\n%s", ta.stdout, want)
	}

	if err := os.Remove(filepath.Join(ta.ConfigDir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	ta.stdout.Reset()
	if code := ta.Run(context.Background(), []string{"doctor"}); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), "Configuration: built-in defaults (none of "+filepath.Join(xdg, "coderunner", "config.yaml")+", ") {
		t.Errorf("doctor output:\n%s", ta.stdout)
	}
}

// TestConfigEnvMissing names CODERUNNER_CONFIG when the file it names
// does not exist, in one line.
func TestConfigEnvMissing(t *testing.T) {
	ta := newApp(t, "")
	ta.LookupEnv = func(k string) (string, bool) {
		if k == config.EnvConfig {
			return filepath.Join(t.TempDir(), "missing.yaml"), true
		}
		return "", false
	}
	if code := ta.Run(context.Background(), []string{"langs"}); code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	if msg := ta.stderr.String(); !strings.Contains(msg, config.EnvConfig+": ") || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr %q", msg)
	}
}
