package coderunner_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/coderunner/coderunner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// WithFiles and WithEntry run a program of several files: here the code
// is empty and the entry is one of the files; a file that would leave
// /workspace is refused, naming it.
func ExampleWithFiles() {
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{Stdout: []byte("from a module\n")}),
	}}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res, err := cr.ExecuteCode(ctx, "python", "", coderunner.WithEntry("app/main.py"), coderunner.WithFiles(
		coderunner.File{Path: "app/main.py", Content: "import helper\nprint(helper.text())\n"},
		coderunner.File{Path: "app/helper.py", Content: "def text():\n    return 'from a module'\n"},
	))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Print(res.Stdout)
	fmt.Println(fake.Last().Args[len(fake.Last().Args)-1], len(fake.Last().Files))

	_, err = cr.ExecuteCode(ctx, "python", "print(1)", coderunner.WithFiles(coderunner.File{Path: "../etc/passwd"}))
	fmt.Println(errors.Is(err, coderunner.ErrInvalidFiles), err)
	// Output:
	// from a module
	// /workspace/app/main.py 2
	// true files[0].path: "../etc/passwd" leaves the workspace
}
