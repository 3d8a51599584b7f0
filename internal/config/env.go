package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// envPrefix starts the name of every environment variable of the
// configuration.
const envPrefix = "CODERUNNER_"

// legacyEnv maps keys to the unprefixed variable names deployments of the
// /execute service already set. They are read before the CODERUNNER_ names, which
// therefore win.
var legacyEnv = map[string]string{ //nolint:gosec // variable names, not credentials
	"control_plane.url":          "CONTROL_PLANE_URL",
	"control_plane.token":        "INTERNAL_API_TOKEN",
	"control_plane.container_id": "CONTAINER_ID",
	"control_plane.pod_name":     "POD_NAME",
	"control_plane.results_dir":  "RESULTS_DIR",
	"server.api_token":           "CODERUNNER_API_TOKEN",
	"backend.name":               "CODERUNNER_BACKEND",
	"server.log_level":           "CODERUNNER_LOG_LEVEL",
}

// leaf is one settable value of the configuration.
type leaf struct {
	key string // limits.run.timeout
	v   reflect.Value
}

// leaves lists the settable values under v, in field order. The languages
// map and the lists (server.api_keys) are not among them.
func leaves(v reflect.Value, prefix string) []leaf {
	var out []leaf
	t := v.Type()
	for i := range t.NumField() {
		name := yamlName(t.Field(i))
		if name == "" {
			continue
		}
		fv := v.Field(i)
		switch {
		case fv.Kind() == reflect.Map, fv.Kind() == reflect.Slice:
			// The languages and the API keys: set in the file (the keys
			// also in server.api_keys_file).
			continue
		case fv.Kind() == reflect.Struct:
			out = append(out, leaves(fv, prefix+name+".")...)
		default:
			out = append(out, leaf{key: prefix + name, v: fv})
		}
	}
	return out
}

// EnvName is the CODERUNNER_ variable of a key such as limits.run.timeout.
func EnvName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func applyEnv(c *Config, env func(string) (string, bool)) error {
	ls := leaves(reflect.ValueOf(c).Elem(), "")
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].key < ls[j].key })
	for _, l := range ls {
		names := []string{EnvName(l.key)}
		if n, ok := legacyEnv[l.key]; ok {
			names = []string{n, EnvName(l.key)}
		}
		for _, name := range names {
			s, ok := env(name)
			if !ok {
				continue
			}
			if err := setValue(l.v, s); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// setValue parses s into v according to v's type.
func setValue(v reflect.Value, s string) error {
	switch v.Interface().(type) {
	case Duration:
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("%q is not an integer", s)
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}
