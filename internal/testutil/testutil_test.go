package testutil

import (
	"os"
	"testing"
)

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
