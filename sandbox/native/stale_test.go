package native

import (
	"fmt"
	"os"
	"testing"
)

func TestDeadOwner(t *testing.T) {
	for name, want := range map[string]bool{
		fmt.Sprintf("run-%d-3", os.Getpid()):  false, // ours
		fmt.Sprintf("run-%d-3", os.Getppid()): false, // alive
		"run-999999999-1":                     true,  // beyond pid_max: gone
		"probe-999999999":                     true,
		"run-x-1":                             false,
		"other-999999999-1":                   false,
		"run--1":                              false,
	} {
		if got := deadOwner(name); got != want {
			t.Errorf("deadOwner(%q) = %v, want %v", name, got, want)
		}
	}
}
