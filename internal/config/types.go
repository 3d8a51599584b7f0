package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that YAML and the environment write as
// "30s", "1500ms", "30m", or a bare number of seconds.
type Duration time.Duration

// ParseDuration parses "30s", "1500ms" or a bare number of seconds ("30",
// "0.5").
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > float64(1<<63-1)/float64(time.Second) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 30s, 1500ms or a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return Duration(d), nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does ("30s").
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML accepts a duration string or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration must be a scalar", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText writes d as a duration string, for JSON.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Redacted is what a non-empty Secret prints as.
const Redacted = "[REDACTED]"

// Secret is a string that never shows itself: fmt, slog, JSON and YAML all
// see Redacted (or "" when it is empty). Convert it with string(s) where
// the value is really needed, such as an Authorization header.
type Secret string

// String returns Redacted, or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString redacts the secret under %#v.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LogValue redacts the secret in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts the secret in JSON and YAML output.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText sets the secret.
func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret(b)
	return nil
}

// Format redacts the secret under every verb, including %s, %q and %x,
// which would otherwise print a string type's value.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprint(f, strconv.Quote(s.String()))
	case 'v':
		if f.Flag('#') {
			fmt.Fprint(f, s.GoString())
			return
		}
		fmt.Fprint(f, s.String())
	default:
		fmt.Fprint(f, s.String())
	}
}
