package testutil

import (
	"os"
	"runtime"
	"testing"
)

// fatalTB records a Fatalf and stops the calling goroutine, as the testing
// package's own does.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}

// timeScale runs TimeScale with the variable set to v: its factor, or
// whether it failed the test.
func timeScale(t *testing.T, v string) (scale float64, failed bool) {
	t.Setenv(TimeScaleEnv, v)
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		scale = TimeScale(tb)
	}()
	<-done
	return scale, tb.failed
}

func TestTimeScale(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want float64
	}{{"", 1}, {"1", 1}, {"4", 4}, {"2.5", 2.5}, {"100", 100}} {
		if got, failed := timeScale(t, tc.v); failed || got != tc.want {
			t.Errorf("%q: %v (failed %v), want %v", tc.v, got, failed, tc.want)
		}
	}
	// A factor that would shorten the limits, or make them absurd, is
	// refused: the test must not run with limits it did not mean.
	for _, v := range []string{"0", "0.5", "-3", "101", "NaN", "Inf", "+Inf", "x", "1e400", " 2"} {
		if got, failed := timeScale(t, v); !failed {
			t.Errorf("%q accepted as %v", v, got)
		}
	}
}

func TestRootless(t *testing.T) {
	t.Setenv("CODERUNNER_TEST_ROOTLESS", "")
	if Rootless() {
		t.Fatal("Rootless() = true without CODERUNNER_TEST_ROOTLESS")
	}
	t.Setenv("CODERUNNER_TEST_ROOTLESS", "1")
	if got, want := Rootless(), os.Geteuid() != 0; got != want {
		t.Fatalf("Rootless() = %v as uid %d, want %v", got, os.Geteuid(), want)
	}
}
