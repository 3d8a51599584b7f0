package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/coderunner/coderunner/lang"
)

// No request may give a program a variable the server reads its own
// configuration or secrets from: every name this package reads, prefixed
// or of the older unprefixed set, is refused by the one check every
// front end's env goes through.
func TestServerVariablesRefusedAsProgramEnv(t *testing.T) {
	var names []string
	for _, l := range leaves(reflect.ValueOf(Default()).Elem(), "") {
		names = append(names, EnvName(l.key))
	}
	for _, n := range legacyEnv {
		names = append(names, n)
	}
	names = append(names, EnvConfig)
	if len(names) < 10 {
		t.Fatalf("only %d variable names found", len(names))
	}
	for _, n := range names {
		if err := lang.CheckEnvName(n); !errors.Is(err, lang.ErrInvalidOption) {
			t.Errorf("env %s: %v, want it refused", n, err)
		}
	}
}
