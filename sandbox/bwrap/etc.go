package bwrap

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/coderunner/coderunner/sandbox"
)

// writeEtc writes the sandbox's own /etc files into dir: no host account,
// host name, resolver or secret is visible inside. They are bound
// read-only into every sandbox; the loader cache is bound from the host.
func writeEtc(dir string, uid int) error {
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			uid, uid, sandbox.WorkspaceDir),
		"group":            fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", uid),
		"hosts":            "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":         "sandbox\n",
		"nsswitch.conf":    "passwd: files\ngroup: files\nhosts: files\n",
		"resolv.conf":      "",
		"fonts/fonts.conf": sandbox.FontsConf,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // bwrap runs as another uid and must read it
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "fonts"), 0o755); err != nil { //nolint:gosec // as above
		return err
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil { //nolint:gosec // world-readable like /etc
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return nil
}

// etcNames lists the synthetic files in the order they are bound.
var etcNames = []string{"passwd", "group", "hosts", "hostname", "nsswitch.conf", "resolv.conf", "fonts/fonts.conf"}
