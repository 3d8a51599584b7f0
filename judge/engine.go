package judge

import (
	"context"

	"github.com/coderunner/coderunner/sandbox"
)

// Engine compiles and runs programs for the judge.
type Engine interface {
	// Prepare makes code ready to run with opts: compiles it when the
	// language is compiled (using a compile cache). A compilation failure is returned
	// as *CompileError (with the compiler output), not as a Program. An
	// unknown language is an error wrapping ErrUnsupportedLanguage;
	// options that break the Engine's rules are a *ValidationError. Other
	// errors are infrastructure failures.
	Prepare(ctx context.Context, language, code string, opts ProgramOptions) (Program, error)
}

// ProgramOptions are what a request adds to its code beyond the
// language's recipe.
type ProgramOptions struct {
	// CompilerFlags are appended to the compile step's argv, from the
	// language's allow-list; they are part of the compile cache's key.
	CompilerFlags []string
	// Args are appended to the argv of every run.
	Args []string
	// Env adds variables to the environment of every run.
	Env map[string]string
}

// Program is a prepared program that can be run many times, concurrently.
type Program interface {
	// Run runs the program once with stdin as its standard input. The
	// verdict is in the Result; an error means the machinery failed.
	Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error)
	// Close releases what Prepare set up.
	Close() error
}
