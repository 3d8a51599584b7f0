package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/coderunner/coderunner/lang"
)

// EnvConfig names the configuration file when no --config flag does.
const EnvConfig = "CODERUNNER_CONFIG"

// SystemDir is the system-wide configuration directory: config.yaml, and
// the docker image map ImagesFile.
const SystemDir = "/etc/coderunner"

// ImagesFile is the docker backend's image map that scripts/build-images.sh
// records in SystemDir after a build: languages.<id>.image for each local
// image the engine holds. It is read beneath the configuration file: a
// language whose image the file (or nothing) sets takes the recorded one,
// so that --backend docker runs on the local images with no --config.
const ImagesFile = "docker-images.yaml"

// Source tells where a configuration comes from.
type Source struct {
	// File is the configuration file; empty when none was found (the
	// built-in defaults).
	File string `json:"file,omitempty"`
	// Via says how File was found: "--config", "CODERUNNER_CONFIG",
	// "$XDG_CONFIG_HOME", "~/.config" or "/etc/coderunner".
	Via string `json:"via,omitempty"`
	// Images is the recorded docker image map read beneath File; empty
	// when there is none.
	Images string `json:"images,omitempty"`
	// Searched lists the files looked for, in order, when File is empty.
	Searched []string `json:"searched,omitempty"`
}

// Find returns where the configuration comes from: the --config flag's
// file when set, else $CODERUNNER_CONFIG when set (either must exist: it
// was asked for), else the first that exists of
// $XDG_CONFIG_HOME/coderunner/config.yaml ($HOME/.config when
// XDG_CONFIG_HOME is unset or not absolute) and systemDir/config.yaml.
// None found is no error: the built-in defaults apply. Images is
// systemDir/ImagesFile when it exists. env reads the environment
// (os.LookupEnv when nil); systemDir is SystemDir outside tests.
func Find(flag string, env func(string) (string, bool), systemDir string) (Source, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var src Source
	images := filepath.Join(systemDir, ImagesFile)
	if isFile(images) {
		src.Images = images
	}
	if flag != "" {
		src.File, src.Via = flag, "--config"
		return src, nil
	}
	if p, ok := env(EnvConfig); ok && p != "" {
		if _, err := os.Stat(p); err != nil {
			return Source{}, fmt.Errorf("%s: %w", EnvConfig, err)
		}
		src.File, src.Via = p, EnvConfig
		return src, nil
	}
	type place struct{ path, via string }
	var places []place
	if x, ok := env("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		places = append(places, place{filepath.Join(x, "coderunner", "config.yaml"), "$XDG_CONFIG_HOME"})
	} else if h, ok := env("HOME"); ok && filepath.IsAbs(h) {
		places = append(places, place{filepath.Join(h, ".config", "coderunner", "config.yaml"), "~/.config"})
	}
	places = append(places, place{filepath.Join(systemDir, "config.yaml"), systemDir})
	for _, p := range places {
		if isFile(p.path) {
			src.File, src.Via = p.path, p.via
			return src, nil
		}
		src.Searched = append(src.Searched, p.path)
	}
	return src, nil
}

// isFile reports whether path names something that exists; a directory
// or an unreadable file is left for Load to report.
func isFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// LoadSource loads the configuration src names: the defaults, the
// recorded image map (src.Images) beneath the file, the file, then the
// environment. The result is validated.
func LoadSource(src Source, env func(string) (string, bool)) (*Config, error) {
	var images map[string]string
	if src.Images != "" {
		var err error
		if images, err = readImages(src.Images); err != nil {
			return nil, err
		}
	}
	return load(src.File, env, images)
}

// imagesDoc is the whole of an ImagesFile.
type imagesDoc struct {
	Languages map[string]struct {
		Image string `yaml:"image"`
	} `yaml:"languages"`
}

// readImages reads an ImagesFile: language id to image.
func readImages(path string) (map[string]string, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	var doc imagesDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("docker image map %s (written by scripts/build-images.sh): %w", path, err)
	}
	out := make(map[string]string, len(doc.Languages))
	for id, l := range doc.Languages {
		if l.Image != "" {
			out[id] = l.Image
		}
	}
	return out, nil
}

// withImages gives each language of images whose image c does not set the
// recorded one. A language the built-in table does not know is left out:
// the map records images, not languages.
func withImages(c *Config, images map[string]string) {
	if len(images) == 0 {
		return
	}
	known := lang.Default()
	ids := make([]string, 0, len(images))
	for id := range images {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r, set := c.Languages[id]
		if set && r.SetsImage() {
			continue
		}
		if l, err := known.Lookup(id); !set && (err != nil || l.ID != id) {
			continue
		}
		if c.Languages == nil {
			c.Languages = map[string]lang.Recipe{}
		}
		c.Languages[id] = r.WithImage(images[id])
	}
}
