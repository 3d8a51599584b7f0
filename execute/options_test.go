package execute

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// A request's arguments follow its language's run argv, its variables
// follow the recipe's, and its compiler flags reach the compile step
// alone.
func TestOptionsReachTheSpecs(t *testing.T) {
	compile := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if err := os.WriteFile(filepath.Join(spec.Workspace, "main"), []byte("ELF"), 0o755); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	ok := func(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	e, fb, _ := newTest(t, compile, ok, ok)
	req := Request{Language: "native", Code: "int main", Args: []string{"one", "two words", ""},
		CompilerFlags: []string{"-O0", "-DX=3"}, Env: map[string]string{"ZETA": "z", "ALPHA": "a=1"}}
	if _, err := e.Execute(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	c, r := fb.Specs()[0], fb.Specs()[1]
	if want := []string{"/usr/bin/ncc", "-m512", "-o", "/workspace/main", "/workspace/prog.nc", "-O0", "-DX=3"}; !slices.Equal(c.Args, want) {
		t.Errorf("compile args %q, want %q", c.Args, want)
	}
	if want := []string{"/workspace/main", "--mem=256", "one", "two words", ""}; !slices.Equal(r.Args, want) {
		t.Errorf("run args %q, want %q", r.Args, want)
	}
	if slices.Contains(c.Env, "ALPHA=a=1") {
		t.Errorf("compile env %q has the program's variables", c.Env)
	}
	if got := r.Env[len(r.Env)-2:]; !slices.Equal(got, []string{"ALPHA=a=1", "ZETA=z"}) {
		t.Errorf("run env %q, want the request's variables last, sorted", r.Env)
	}

	// An interpreted language gets the arguments and the variables too.
	if _, err := e.Execute(context.Background(), Request{Language: "script", Code: "x", Args: []string{"-v"}, Env: map[string]string{"MODE": "fast"}}); err != nil {
		t.Fatal(err)
	}
	s := fb.Specs()[2]
	if want := []string{"/usr/bin/script-interp", "-q", "/workspace/main.sc", "-v"}; !slices.Equal(s.Args, want) {
		t.Errorf("script args %q, want %q", s.Args, want)
	}
	if !slices.Contains(s.Env, "MODE=fast") || !slices.Contains(s.Env, "SCRIPT_MODE=safe") {
		t.Errorf("script env %q", s.Env)
	}
}

// Refused options are refused before anything runs, naming the field.
func TestRefusedOptions(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		field string
	}{
		{"flag not allowed", Request{Language: "native", CompilerFlags: []string{"-O9"}}, "compiler_flags[0]"},
		{"denied flag", Request{Language: "native", CompilerFlags: []string{"-O1", "-B/tmp"}}, "compiler_flags[1]"},
		{"@file", Request{Language: "native", CompilerFlags: []string{"@/etc/passwd"}}, "compiler_flags[0]"},
		{"flag for an interpreted language", Request{Language: "script", CompilerFlags: []string{"-O1"}}, "compiler_flags"},
		{"NUL in an argument", Request{Language: "script", Args: []string{"a\x00b"}}, "args[0]"},
		{"LD_PRELOAD", Request{Language: "script", Env: map[string]string{"LD_PRELOAD": "/workspace/x.so"}}, "env.LD_PRELOAD"},
		{"PATH", Request{Language: "script", Env: map[string]string{"PATH": "/workspace"}}, "env.PATH"},
		{"recipe's own", Request{Language: "script", Env: map[string]string{"SCRIPT_MODE": "unsafe"}}, "env.SCRIPT_MODE"},
		{"lower case", Request{Language: "script", Env: map[string]string{"path": "x"}}, `env["path"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fb, _ := newTest(t)
			tt.req.Code = "x"
			_, err := e.Execute(context.Background(), tt.req)
			var oe *lang.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, lang.ErrInvalidOption) || oe.Field != tt.field {
				t.Fatalf("Execute() error %v, want an OptionError for %s", err, tt.field)
			}
			if len(fb.Specs()) != 0 {
				t.Error("a refused request reached the sandbox")
			}
		})
	}
}
