package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// A child's child is found, with its uid; this process is not.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var grandchild bool
	for range 200 {
		for _, p := range Descendants() {
			if p.PID == os.Getpid() {
				t.Fatal("this process is among its descendants")
			}
			if p.PPID == cmd.Process.Pid {
				if p.UID != os.Getuid() {
					t.Fatalf("the grandchild's uid: %d, want %d", p.UID, os.Getuid())
				}
				grandchild = true
			}
		}
		if grandchild {
			break
		}
		_ = exec.Command("/bin/true").Run() // a pause that lets the shell fork
	}
	if !grandchild {
		t.Fatal("the shell's child was not found")
	}
}
