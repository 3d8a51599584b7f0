package config

import (
	"strings"
	"testing"

	"github.com/coderunner/coderunner/lang"
)

func TestBackendSections(t *testing.T) {
	c, err := Parse([]byte("backend:\n  bwrap_path: /opt/bwrap\ndocker:\n  host: unix:///d.sock\n  user: \"1000:1000\"\n  reuse_containers: true\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BwrapSection()
	if err != nil || b.Path != "/opt/bwrap" {
		t.Errorf("BwrapSection() = %+v, %v, want path /opt/bwrap", b, err)
	}
	d, err := c.DockerSection()
	if err != nil {
		t.Fatal(err)
	}
	if d.Host != "unix:///d.sock" || d.User != "1000:1000" || !d.ReuseContainers || d.PullPolicy != c.Docker.PullPolicy {
		t.Errorf("DockerSection() = %+v, want the docker settings", d.Docker)
	}
	if d.Languages == nil {
		t.Fatal("DockerSection() has no language table")
	}
	if _, err := d.Languages.Lookup("python"); err != nil {
		t.Errorf("the section's language table: %v", err)
	}

	c.Languages = map[string]lang.Recipe{"cobol": {Source: "a.cob"}}
	if _, err := c.DockerSection(); err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Errorf("DockerSection() with a bad language: %v, want an error naming it", err)
	}
}
