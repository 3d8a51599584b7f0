package judge

import (
	"context"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
)

// Engine compiles and runs programs for the judge.
type Engine interface {
	// Prepare makes code ready to run: compiles it when the language is
	// compiled (using a compile cache). A compilation failure is returned
	// as *CompileError (with the compiler output), not as a Program. An
	// unknown language is an error wrapping ErrUnsupportedLanguage. Other
	// errors are infrastructure failures.
	Prepare(ctx context.Context, language, code string) (Program, error)
}

// SourceEngine is an Engine that also prepares programs of several files
// (a request's Files and Entry). The judge asks for it only when a request
// carries files.
type SourceEngine interface {
	Engine
	// PrepareSource is Prepare for src's code and files. Files that do
	// not fit the language (a path taken by the build, an entry that is
	// not a source) are an error wrapping multifile.ErrInvalid.
	PrepareSource(ctx context.Context, language string, src multifile.Source) (Program, error)
}

// Program is a prepared program that can be run many times, concurrently.
type Program interface {
	// Run runs the program once with stdin as its standard input. The
	// verdict is in the Result; an error means the machinery failed.
	Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error)
	// Close releases what Prepare set up.
	Close() error
}
