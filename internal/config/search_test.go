package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// searchEnv is an environment of exactly vars.
func searchEnv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFindOrder puts a configuration file in every place and removes them
// one by one, from the first in the order to the last: --config,
// CODERUNNER_CONFIG, $XDG_CONFIG_HOME/coderunner/config.yaml (else
// ~/.config/coderunner/config.yaml), /etc/coderunner/config.yaml.
func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	flag := writeFile(t, filepath.Join(root, "flag.yaml"), "")
	fromEnv := writeFile(t, filepath.Join(root, "env.yaml"), "")
	xdg := filepath.Join(root, "xdg")
	xdgFile := writeFile(t, filepath.Join(xdg, "coderunner", "config.yaml"), "")
	home := filepath.Join(root, "home")
	homeFile := writeFile(t, filepath.Join(home, ".config", "coderunner", "config.yaml"), "")
	system := filepath.Join(root, "etc")
	systemFile := writeFile(t, filepath.Join(system, "config.yaml"), "")
	all := map[string]string{EnvConfig: fromEnv, "XDG_CONFIG_HOME": xdg, "HOME": home}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			if !slices.Contains(keys, k) {
				m[k] = v
			}
		}
		return m
	}

	for _, tc := range []struct {
		name      string
		flag      string
		env       map[string]string
		remove    []string
		file, via string
	}{
		{name: "flag first", flag: flag, env: all, file: flag, via: "--config"},
		{name: "then CODERUNNER_CONFIG", env: all, file: fromEnv, via: EnvConfig},
		{name: "then XDG_CONFIG_HOME", env: without(EnvConfig), file: xdgFile, via: "$XDG_CONFIG_HOME"},
		{name: "XDG_CONFIG_HOME set: ~/.config is not looked at", env: without(EnvConfig), remove: []string{xdgFile}, file: systemFile, via: system},
		{name: "relative XDG_CONFIG_HOME is ignored", env: map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": home}, file: homeFile, via: "~/.config"},
		{name: "then ~/.config", env: without(EnvConfig, "XDG_CONFIG_HOME"), file: homeFile, via: "~/.config"},
		{name: "then /etc", env: without(EnvConfig, "XDG_CONFIG_HOME"), remove: []string{homeFile}, file: systemFile, via: system},
		{name: "empty CODERUNNER_CONFIG is unset", env: map[string]string{EnvConfig: ""}, file: systemFile, via: system},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range tc.remove {
				if err := os.Rename(f, f+".away"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Rename(f+".away", f) })
			}
			src, err := Find(tc.flag, searchEnv(tc.env), system)
			if err != nil {
				t.Fatal(err)
			}
			if src.File != tc.file || src.Via != tc.via {
				t.Fatalf("found %q via %q, want %q via %q", src.File, src.Via, tc.file, tc.via)
			}
		})
	}

	t.Run("none", func(t *testing.T) {
		src, err := Find("", searchEnv(map[string]string{"HOME": home}), filepath.Join(root, "no-etc"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(homeFile, homeFile+".away"); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.Rename(homeFile+".away", homeFile) }()
		src, err = Find("", searchEnv(map[string]string{"HOME": home}), filepath.Join(root, "no-etc"))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{homeFile, filepath.Join(root, "no-etc", "config.yaml")}
		if src.File != "" || !slices.Equal(src.Searched, want) {
			t.Fatalf("found %q, searched %q; want none, searched %q", src.File, src.Searched, want)
		}
		c, err := LoadSource(src, searchEnv(nil))
		if err != nil || c.Docker.PullPolicy != Default().Docker.PullPolicy {
			t.Fatalf("defaults: %v", err)
		}
	})

	t.Run("missing CODERUNNER_CONFIG", func(t *testing.T) {
		_, err := Find("", searchEnv(map[string]string{EnvConfig: filepath.Join(root, "missing.yaml")}), system)
		if err == nil || !strings.Contains(err.Error(), EnvConfig) {
			t.Fatalf("err %v, want one naming %s", err, EnvConfig)
		}
	})
}

// TestRecordedImages reads the image map scripts/build-images.sh records
// beneath the configuration: a language the file gives no image takes the
// recorded one, an image the file sets wins, the rest of a language's
// settings stay, and an unknown language is left out.
func TestRecordedImages(t *testing.T) {
	system := t.TempDir()
	writeFile(t, filepath.Join(system, ImagesFile), `# Written by coderunner's scripts/build-images.sh
languages:
  python: {image: "local/core:1"}
  c: {image: "local/core:1"}
  rust: {image: "local/rust:1"}
  cobol: {image: "local/cobol:1"}
`)
	user := writeFile(t, filepath.Join(t.TempDir(), "config.yaml"), `languages:
  python: {image: "python:3.12-slim"}
  rust: {timeout_factor: 2}
`)
	src, err := Find(user, searchEnv(nil), system)
	if err != nil {
		t.Fatal(err)
	}
	if src.Images != filepath.Join(system, ImagesFile) {
		t.Fatalf("images %q", src.Images)
	}
	c, err := LoadSource(src, searchEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := c.LanguageTable()
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"python": "python:3.12-slim", "c": "local/core:1", "rust": "local/rust:1", "go": "golang:1.21-alpine"} {
		l, err := tbl.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Image != want {
			t.Errorf("%s: image %q, want %q", id, l.Image, want)
		}
	}
	if r := c.Languages["rust"]; r.TimeoutFactor != 2 {
		t.Errorf("rust's own settings lost: %+v", r)
	}
	if _, ok := c.Languages["cobol"]; ok {
		t.Error("an unknown language of the image map was added")
	}

	// Load alone (the tests' and the Go API's) reads no image map.
	plain, err := Load(user, searchEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Languages["c"]; ok {
		t.Error("Load read the image map")
	}

	writeFile(t, filepath.Join(system, ImagesFile), "languages:\n  c: {image: x, pull: always}\n")
	if _, err := LoadSource(src, searchEnv(nil)); err == nil || !strings.Contains(err.Error(), ImagesFile) {
		t.Fatalf("bad image map: err %v, want one naming the file", err)
	}
}
