package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/coderunner/coderunner"
)

// apiChildEnv makes mcpbench serve the Go API to its parent instead: the
// baseline for the modes whose server is a process of its own, in the
// same conditions (its own sandboxes, nothing else running in it).
const apiChildEnv = "MCPBENCH_API_CHILD"

// apiChild reads one line per call on stdin, runs the Python print
// through the Go API, and answers "ok" and the program's wall time in
// seconds, or the error, on one line. It ends at EOF.
func apiChild(warm int) error {
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{Warm: warm})
	if err != nil {
		return err
	}
	defer cr.Close()
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		res, err := cr.ExecuteCode(ctx, "python", code)
		if err == nil {
			err = check(res)
		}
		var answer string
		if err == nil {
			answer = "ok " + strconv.FormatFloat(res.ExecutionTime, 'f', -1, 64)
		} else {
			answer = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		if _, err := fmt.Fprintln(out, answer); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}

// apiProcess is the parent's end of an apiChild.
type apiProcess struct {
	proc *piped
	out  *bufio.Reader
}

// startAPIChild starts this program again as an apiChild with warm
// sandboxes started ahead of need.
func startAPIChild(warm int) (*apiProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	proc, err := startPiped([]string{apiChildEnv + "=" + strconv.Itoa(warm)}, self)
	if err != nil {
		return nil, err
	}
	return &apiProcess{proc: proc, out: bufio.NewReader(proc.out)}, nil
}

func (p *apiProcess) call(ctx context.Context) error {
	if _, err := io.WriteString(p.proc.in, "\n"); err != nil {
		return err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("the Go API process: %w", err)
	}
	line = strings.TrimSpace(line)
	wall, ok := strings.CutPrefix(line, "ok ")
	if !ok {
		return errors.New(line)
	}
	secs, err := strconv.ParseFloat(wall, 64)
	if err != nil {
		return fmt.Errorf("the Go API process: %q: %w", line, err)
	}
	reportWall(ctx, secs)
	return nil
}

// stop ends the child.
func (p *apiProcess) stop() { p.proc.stop() }

// piped is a subprocess whose standard input and output are pipes to this
// process.
type piped struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser
}

// startPiped starts name with args, the environment of childEnv plus env,
// and this process's standard error.
func startPiped(env []string, name string, args ...string) (*piped, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(childEnv(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &piped{cmd: cmd, in: in, out: out}, nil
}

// stop closes the subprocess's standard input, which ends it, and waits
// for it.
func (p *piped) stop() {
	_ = p.in.Close()
	_ = p.cmd.Wait()
}
