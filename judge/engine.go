package judge

import (
	"context"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
)

// Engine compiles and runs programs for the judge.
type Engine interface {
	// Prepare makes code ready to run with opts: compiles it when the
	// language is compiled (using a compile cache). A compilation failure is returned
	// as *CompileError (with the compiler output), not as a Program. An
	// unknown language is an error wrapping ErrUnsupportedLanguage;
	// options that break the Engine's rules are a *ValidationError, and
	// files that do not fit the language an error wrapping
	// multifile.ErrInvalid. Other errors are infrastructure failures.
	Prepare(ctx context.Context, language, code string, opts ProgramOptions) (Program, error)
}

// ProgramOptions are what a request adds to its code beyond the
// language's recipe.
type ProgramOptions struct {
	// Files are written beneath the workspace with the code before the
	// program is compiled or run, decoded and checked by multifile.Decode;
	// every file is part of the compile cache's key. Files that do not
	// fit the language (a path the build writes, an entry that is not a
	// source) are an error wrapping multifile.ErrInvalid.
	Files []sandbox.File
	// Entry names the file to run or compile, relative to the workspace;
	// empty means the code's file. The code may be empty when Files and
	// Entry hold the program.
	Entry string
	// CompilerFlags are appended to the compile step's argv, from the
	// language's allow-list; they are part of the compile cache's key.
	CompilerFlags []string
	// Args are appended to the argv of every run.
	Args []string
	// Env adds variables to the environment of every run.
	Env map[string]string
}

// Source is the program of code with o's files and entry, as
// lang.Language.Place lays it out.
func (o ProgramOptions) Source(code string) multifile.Source {
	return multifile.Source{Code: code, Files: o.Files, Entry: o.Entry}
}

// Program is a prepared program that can be run many times, concurrently.
type Program interface {
	// Run runs the program once with stdin as its standard input. The
	// verdict is in the Result; an error means the machinery failed.
	Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error)
	// Close releases what Prepare set up.
	Close() error
}
