package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxFileSize bounds the configuration file.
const maxFileSize = 1 << 20

// Load reads the configuration: defaults, then the YAML file at path
// (none when path is empty), then the environment as env reports it
// (os.LookupEnv when nil). The result is validated.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	return load(path, env, nil)
}

// load is Load with a recorded docker image map (see withImages) applied
// beneath the file.
func load(path string, env func(string) (string, bool), images map[string]string) (*Config, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = readBounded(path); err != nil {
			return nil, err
		}
	}
	c, err := parse(data, env, images)
	if err != nil && path != "" {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, err
}

// readBounded reads a configuration file of at most maxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("unable to read config %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("config %s: larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

func parse(data []byte, env func(string) (string, bool), images map[string]string) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	c := Default()
	if err := decode(data, c); err != nil {
		return nil, err
	}
	withImages(c, images)
	if err := applyEnv(c, env); err != nil {
		return nil, err
	}
	if err := c.Server.loadKeysFile(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func decode(data []byte, c *Config) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil
	}
	if err := checkKeys(root, reflect.TypeOf(*c), ""); err != nil {
		return err
	}
	// checkKeys named any unknown key; KnownFields stays as a backstop.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	return strict.Decode(c)
}

// checkKeys walks a mapping against the struct it decodes into and names
// the first unknown key with its full path (limits.run.timout).
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		// A list of sections, such as server.api_keys.
		name := strings.TrimSuffix(prefix, ".")
		if n.Kind != yaml.SequenceNode {
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
				return nil
			}
			return fmt.Errorf("line %d: %s must be a list", n.Line, name)
		}
		for i, item := range n.Content {
			if err := checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d].", name, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(Duration(0)) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return nil
		}
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			return fmt.Errorf("line %d: the configuration must be a mapping", n.Line)
		}
		return fmt.Errorf("line %d: %s must be a mapping", n.Line, name)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if name := yamlName(f); name != "" {
			fields[name] = f.Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("line %d: unknown key %q", k.Line, prefix+k.Value)
		}
		if err := checkKeys(v, ft, prefix+k.Value+"."); err != nil {
			return err
		}
	}
	return nil
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}
