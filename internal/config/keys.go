package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// keyNamePattern is what an API key's name must match: a bounded label
// for logs and metrics.
var keyNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// keyHashPattern is a SHA-256 in hex.
var keyHashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// reservedKeyPrefix starts the names the server gives the tokens of
// server.api_token ("api_token", "api_token_2", …).
const reservedKeyPrefix = "api_token"

// keysFile is the content of server.api_keys_file.
type keysFile struct {
	APIKeys []APIKey `yaml:"api_keys"`
}

// loadKeysFile reads server.api_keys_file, if set, into s.fileKeys.
func (s *Server) loadKeysFile() error {
	s.fileKeys = nil
	if s.APIKeysFile == "" {
		return nil
	}
	if !filepath.IsAbs(s.APIKeysFile) {
		return fmt.Errorf("server.api_keys_file: %q is not an absolute path", s.APIKeysFile)
	}
	data, err := readBounded(s.APIKeysFile)
	if err != nil {
		return fmt.Errorf("server.api_keys_file: %w", err)
	}
	var f keysFile
	if err := decodeStrict(data, &f); err != nil {
		return fmt.Errorf("server.api_keys_file %s: %w", s.APIKeysFile, err)
	}
	if len(f.APIKeys) == 0 {
		return fmt.Errorf("server.api_keys_file %s: holds no key (api_keys: is empty or missing)", s.APIKeysFile)
	}
	s.fileKeys = f.APIKeys
	return nil
}

// decodeStrict decodes one YAML document into v, naming an unknown key
// with its path.
func decodeStrict(data []byte, v any) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
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
	if err := checkKeys(root, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	return strict.Decode(v)
}

// validateKeys checks server.api_keys and the keys of
// server.api_keys_file together.
func (s *Server) validateKeys() error {
	keys := s.Keys()
	if len(keys) > MaxAPIKeys {
		return fmt.Errorf("server.api_keys: %d keys, more than the %d allowed", len(keys), MaxAPIKeys)
	}
	names := map[string]bool{}
	hashes := map[string]string{}
	for _, tok := range s.APITokens() {
		h := sha256.Sum256([]byte(tok))
		hashes[hex.EncodeToString(h[:])] = "server.api_token"
	}
	for i, k := range keys {
		where := fmt.Sprintf("server.api_keys[%d]", i)
		if i >= len(s.APIKeys) {
			where = fmt.Sprintf("server.api_keys_file %s: api_keys[%d]", s.APIKeysFile, i-len(s.APIKeys))
		}
		if err := k.validate(where); err != nil {
			return err
		}
		if names[k.Name] {
			return fmt.Errorf("%s.name: %q is the name of another key", where, k.Name)
		}
		names[k.Name] = true
		if other, ok := hashes[k.KeySHA256]; ok {
			return fmt.Errorf("%s.key_sha256: the same key as %s", where, other)
		}
		hashes[k.KeySHA256] = where
	}
	return nil
}

// validate checks one key; where names it in messages.
func (k *APIKey) validate(where string) error {
	switch {
	case !keyNamePattern.MatchString(k.Name):
		return fmt.Errorf("%s.name: %q must match %s (it goes into logs and metrics)", where, k.Name, keyNamePattern)
	case strings.HasPrefix(k.Name, reservedKeyPrefix):
		return fmt.Errorf("%s.name: %q is reserved: names starting with %q are those of server.api_token's tokens", where, k.Name, reservedKeyPrefix)
	case !keyHashPattern.MatchString(k.KeySHA256):
		return fmt.Errorf("%s.key_sha256: must be the key's SHA-256 as 64 lowercase hex digits (coderunner keyhash prints it), not the key itself", where)
	case math.IsNaN(k.RequestsPerSecond) || k.RequestsPerSecond < 0 || k.RequestsPerSecond > MaxKeyRate:
		return fmt.Errorf("%s.requests_per_second: %s is out of range 0..%d", where, fmtFloat(k.RequestsPerSecond), MaxKeyRate)
	case k.Burst != 0 && k.RequestsPerSecond == 0:
		return fmt.Errorf("%s.burst: set without requests_per_second", where)
	}
	return firstErr(
		intRange(where+".burst", k.Burst, 0, MaxKeyRate),
		intRange(where+".max_concurrent", k.MaxConcurrent, 0, MaxSlots+MaxQueue),
		intRange(where+".max_sessions", k.MaxSessions, 0, 100000),
	)
}
