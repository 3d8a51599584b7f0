package cli

import (
	"flag"
	"fmt"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

// toolFlags name judge's checker and interactor programs.
type toolFlags struct {
	checker, checkerLang       string
	interactor, interactorLang string
}

func (t *toolFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&t.checker, "checker", "", "checker program `FILE`: run as `checker INPUT OUTPUT ANSWER` on each test instead of --compare; "+
		"exit 0 accepted, 1 wrong answer, 2 presentation error, 7 partial (points 0..1 first on stdout), anything else judge_error")
	fs.StringVar(&t.checkerLang, "checker-lang", "", "language `ID` of the --checker program (default: from its extension)")
	fs.StringVar(&t.interactor, "interactor", "", "interactor program `FILE` of an interactive problem: run as `interactor INPUT OUTPUT` "+
		"with its stdout piped to the solution's stdin and back; its exit code decides as a checker's")
	fs.StringVar(&t.interactorLang, "interactor-lang", "", "language `ID` of the --interactor program (default: from its extension)")
}

// tools reads the programs the flags name into the request's checker and
// interactor.
func (t *toolFlags) tools(langs *lang.Table) (checker, interactor *judge.Tool, err error) {
	if checker, err = readTool("checker", t.checker, t.checkerLang, langs); err != nil {
		return nil, nil, err
	}
	if interactor, err = readTool("interactor", t.interactor, t.interactorLang, langs); err != nil {
		return nil, nil, err
	}
	return checker, interactor, nil
}

func readTool(name, file, language string, langs *lang.Table) (*judge.Tool, error) {
	if file == "" {
		if language != "" {
			return nil, fmt.Errorf("--%s-lang: given without --%s", name, name)
		}
		return nil, nil
	}
	src, err := readFileBounded(file, judge.MaxCodeBytes)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	var l *lang.Language
	if language != "" {
		l, err = langs.Lookup(language)
	} else {
		l, err = langs.ForFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("--%s-lang: %w", name, err)
	}
	return &judge.Tool{Language: l.ID, Code: string(src)}, nil
}
