package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/lang"
)

func TestRunProgramOptions(t *testing.T) {
	ta := newApp(t, "")
	file := source(t, "x.fkc", "print compiled")
	code := ta.run("run", "--compiler-flag", "-O0", "--compiler-flag=-DX=3", "--env", "GREETING=hi there", "--env", "EMPTY=",
		file, "--json", "--", "one", "two words", "--memory", "-")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	specs := ta.fake.Specs()
	c, r := specs[len(specs)-2], specs[len(specs)-1]
	if got := c.Args[len(c.Args)-2:]; !slices.Equal(got, []string{"-O0", "-DX=3"}) {
		t.Errorf("compile argv %q, want the flags at its end", c.Args)
	}
	if got := r.Args[1:]; !slices.Equal(got, []string{"one", "two words", "--memory", "-"}) {
		t.Errorf("run argv %q, want everything after -- as the program's", r.Args)
	}
	if !slices.Contains(r.Env, "GREETING=hi there") || !slices.Contains(r.Env, "EMPTY=") {
		t.Errorf("run env %q lacks the --env variables", r.Env)
	}
	if r.Limits.Memory != 256<<20 {
		t.Errorf("--memory after -- was taken as a flag: %+v", r.Limits)
	}

	// With nothing before --, the first argument after it is the file.
	ta = newApp(t, "")
	if code := ta.run("run", "--", source(t, "main.fk", "print hi"), "a"); code != 0 || ta.fake.Last().Args[2] != "a" {
		t.Errorf("run -- FILE a: exit %d, argv %q, stderr %s", code, ta.fake.Last().Args, ta.stderr)
	}
}

// Several FILEs before -- and the program's arguments after it, with
// compiler flags and variables: every file is compiled together with the
// flags, and the run gets the arguments and variables.
func TestRunFilesWithProgramOptions(t *testing.T) {
	ta := newApp(t, "")
	main, util := source(t, "main.fkc", "print compiled"), source(t, "util.fkc", "helper")
	code := ta.run("run", "--compiler-flag", "-DX=3", "--env", "GREETING=hi", main, util, "--json", "--", "one", "util.fkc")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	specs := ta.fake.Specs()
	c, r := specs[len(specs)-2], specs[len(specs)-1]
	if got := c.Args[len(c.Args)-3:]; !slices.Equal(got, []string{"/workspace/main.fkc", "/workspace/util.fkc", "-DX=3"}) {
		t.Errorf("compile argv %q, want both files then the flag", c.Args)
	}
	var paths []string
	for _, f := range c.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"main.fkc", "util.fkc"}) {
		t.Errorf("compile step's files %q", paths)
	}
	if got := r.Args[1:]; !slices.Equal(got, []string{"one", "util.fkc"}) {
		t.Errorf("run argv %q, want the arguments after -- only", r.Args)
	}
	if !slices.Contains(r.Env, "GREETING=hi") {
		t.Errorf("run env %q lacks GREETING", r.Env)
	}
}

func TestRunProgramOptionsRefused(t *testing.T) {
	fk, fkc := source(t, "main.fk", "print hi"), source(t, "x.fkc", "print hi")
	for _, tt := range []struct {
		name  string
		args  []string
		inErr string
	}{
		{"denied flag", []string{"run", "--compiler-flag", "-B/tmp", fkc}, `--compiler-flag: "-B/tmp" is refused`},
		{"flag not allowed", []string{"run", "--compiler-flag", "-O9", fkc}, `--compiler-flag: "-O9" is not among the fakec compiler flags allowed`},
		{"@file", []string{"run", "--compiler-flag", "@flags.txt", fkc}, `--compiler-flag: "@flags.txt" does not start with "-"`},
		{"interpreted", []string{"run", "--compiler-flag", "-O1", fk}, "--compiler-flag: fake has no compile step"},
		{"LD_PRELOAD", []string{"run", "--env", "LD_PRELOAD=/workspace/x.so", fk}, "--env LD_PRELOAD: names starting with LD_ are refused"},
		{"PATH", []string{"run", "--env", "PATH=/workspace", fk}, "--env PATH: set by the sandbox"},
		{"lower case", []string{"run", "--env", "home=x", fk}, `--env ["home"]: a variable name must match`},
		{"no equals", []string{"run", "--env", "GREETING", fk}, `invalid value "GREETING" for flag --env: "GREETING" is not NAME=VALUE`},
		{"twice", []string{"run", "--env", "A=1", "--env", "A=2", fk}, "A is given twice"},
		{"NUL argument", []string{"run", fk, "--", "a\x00b"}, "the program's arguments (after --): args[0]: contains a NUL byte"},
		// Several FILEs make one program: a word meant for the program,
		// given before --, is a file that does not exist.
		{"argument before --", []string{"run", fk, "no-such-file", "--", "a"}, "no-such-file: no such file or directory (the program's arguments go after --)"},
		{"judge argument before --", []string{"judge", "--tests", "t.json", fk, "no-such-file"}, "(the program's arguments go after --)"},
		{"judge denied flag", []string{"judge", "--tests", "t.json", "--compiler-flag", "-Wl,-T,x", fkc}, `--compiler-flag: "-Wl,-T,x" is refused`},
		{"judge LD_AUDIT", []string{"judge", "--tests", "t.json", "--env", "LD_AUDIT=x", fkc}, "--env LD_AUDIT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ta := newApp(t, "")
			if code := ta.run(tt.args...); code != 2 || !strings.Contains(ta.stderr.String(), tt.inErr) {
				t.Errorf("exit %d stderr %q, want 2 naming %q", code, ta.stderr, tt.inErr)
			}
			if n := len(ta.fake.Specs()); n != 0 {
				t.Errorf("%d runs of a refused command", n)
			}
		})
	}
}

func TestJudgeProgramOptions(t *testing.T) {
	ta := newApp(t, "")
	tests := source(t, "tests.json", `[{"input":"","expected_output":"hi"},{"input":"","expected_output":"hi"}]`)
	// The fake runs only programs in a host workspace, which the judge's
	// interpreted runs do not have: what counts is the runs it was asked for.
	ta.run("judge", "--json", "--parallel", "1", "--tests", tests, "--env", "MODE=fast", source(t, "main.fk", "print hi"), "--", "--verbose")
	specs := ta.fake.Specs()
	if len(specs) == 0 {
		t.Fatalf("no run; stdout %s stderr %s", ta.stdout, ta.stderr)
	}
	for _, s := range specs {
		if s.Args[len(s.Args)-1] != "--verbose" || !slices.Contains(s.Env, "MODE=fast") {
			t.Errorf("run argv %q env %q, want --verbose and MODE=fast", s.Args, s.Env)
		}
	}

	// The compiler flags go to the one compile step. (The fake compiler
	// leaves no program, which the judge's compile cache refuses.)
	ta = newApp(t, "")
	ta.run("judge", "--json", "--tests", tests, "--compiler-flag", "-O2", source(t, "x.fkc", "print hi"))
	specs = ta.fake.Specs()
	if len(specs) != 1 || specs[0].Args[0] != "/usr/bin/fakecc" || specs[0].Args[len(specs[0].Args)-1] != "-O2" {
		for _, s := range specs {
			t.Errorf("step %q", s.Args)
		}
		t.Errorf("want one compile step ending with -O2")
	}
}

// langs --json shows each compiled language's allow-list.
func TestLangsShowCompilerFlags(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("langs", "--json"); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.stderr)
	}
	var infos []lang.Info
	if err := json.Unmarshal(ta.stdout.Bytes(), &infos); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range infos {
		found = found || l.ID == "fakec"
		switch {
		case l.ID == "fakec" && !slices.Equal(l.CompilerFlags, []string{"-O[0-3]", "-D[A-Z]+=[0-9]+"}):
			t.Errorf("fakec's compiler flags %q", l.CompilerFlags)
		case l.ID == "fake" && l.CompilerFlags != nil:
			t.Errorf("fake, interpreted, shows compiler flags %q", l.CompilerFlags)
		}
	}
	if !found {
		t.Errorf("no fakec in %s", ta.stdout)
	}
}
