package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// Pull policies, the values of the configuration's docker.pull_policy.
const (
	PullAlways       = "always"
	PullIfNotPresent = "if_not_present"
	PullNever        = "never"
)

// systemDirs are the sandbox paths an image provides itself: a spec's
// mounts of them (the host's /usr and friends) are not bound into the
// container.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// images maps a spec to the image of its language. The language table's
// recipes name each language's image (the configuration's
// languages.<id>.image overrides it); a spec
// does not name its language, so it is recognised by its program.
type images struct {
	langs []langImage
	// def runs specs no language claims.
	def string
	// provided are the toolchain mount targets (/opt/jdk, /opt/rust, ...)
	// an image provides at the same path.
	provided []string
}

// langImage is what recognises one language's programs.
type langImage struct {
	id, image string
	compiled  bool
	// mount is the toolchain's neutral sandbox path, e.g. /opt/jdk.
	mount string
	// program and paths name the toolchain's binary.
	program string
	paths   []string
	// env are the recipe's environment entries with nothing left to
	// expand.
	env []string
}

// newImages reads the images and toolchain paths of a language table.
// def, when empty, is the image of the bash language.
func newImages(t *lang.Table, def string) *images {
	m := &images{}
	for _, l := range t.All() {
		tc := l.Recipe.Toolchain
		li := langImage{id: l.ID, image: l.Image, compiled: l.Compiled, mount: tc.Mount, program: tc.Program, paths: tc.Paths}
		for _, e := range l.Recipe.Env {
			e = strings.ReplaceAll(e, "{root}", tc.Mount)
			if !strings.Contains(e, "{") {
				li.env = append(li.env, e)
			}
		}
		if tc.Mount != "" {
			m.provided = append(m.provided, tc.Mount)
		}
		if def == "" && l.ID == "bash" {
			def = l.Image
		}
		m.langs = append(m.langs, li)
	}
	slices.SortFunc(m.langs, func(a, b langImage) int { return strings.Compare(a.id, b.id) })
	m.def = def
	return m
}

// forLanguage is the image of the language id, or the default image.
func (m *images) forLanguage(id string) string {
	for _, l := range m.langs {
		if l.id == id && l.image != "" {
			return l.image
		}
	}
	return m.def
}

// refs maps each configured image to the languages it runs ("default" for
// the image of programs no language claims).
func (m *images) refs() map[string][]string {
	refs := map[string][]string{}
	for _, l := range m.langs {
		if l.image != "" {
			refs[l.image] = append(refs[l.image], l.id)
		}
	}
	if m.def != "" {
		refs[m.def] = append(refs[m.def], "default")
	}
	return refs
}

// forSpec is the image that runs spec.
func (m *images) forSpec(s *sandbox.Spec) string {
	a0 := s.Args[0]
	base := path.Base(a0)
	for _, l := range m.langs {
		if l.image == "" {
			continue
		}
		if l.mount != "" && strings.HasPrefix(a0, l.mount+"/") {
			return l.image
		}
		if slices.Contains(l.paths, a0) || (l.program != "" && isVersioned(base, l.program)) {
			return l.image
		}
	}
	if m.provides(path.Dir(a0)) {
		return m.def
	}
	// A compiled program, in the workspace or a mounted directory: the
	// compiled language whose environment the spec carries built it.
	best, score := "", 0
	for _, l := range m.langs {
		if !l.compiled || l.image == "" || len(l.env) == 0 {
			continue
		}
		n := 0
		for _, e := range l.env {
			if slices.Contains(s.Env, e) {
				n++
			}
		}
		if n == len(l.env) && n > score {
			best, score = l.image, n
		}
	}
	if best != "" {
		return best
	}
	return m.def
}

// isVersioned reports whether name is program or program followed by a
// version (python3.11 for python3).
func isVersioned(name, program string) bool {
	rest, ok := strings.CutPrefix(name, program)
	if !ok {
		return false
	}
	return strings.Trim(rest, "0123456789.-") == ""
}

// provides reports whether the image provides the sandbox path p itself.
func (m *images) provides(p string) bool {
	for _, d := range append(slices.Clip(systemDirs), m.provided...) {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// ensureImage makes image present according to the pull policy. A missing
// image is an ErrSetup error naming it.
func (b *Backend) ensureImage(ctx context.Context, ref string) error {
	if _, ok := b.ready.Load(ref); ok {
		return nil
	}
	b.pullMu.Lock()
	defer b.pullMu.Unlock()
	if _, ok := b.ready.Load(ref); ok {
		return nil
	}
	_, err := b.cli.ImageInspect(ctx, ref)
	present := err == nil
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: unable to inspect image %s: %w", sandbox.ErrSetup, ref, err)
	}
	switch {
	case present && b.pull != PullAlways:
	case !present && b.pull == PullNever:
		return fmt.Errorf("%w: image %s is not present and docker.pull_policy is %q: build it (scripts/build-images.sh) or pull it", sandbox.ErrSetup, ref, PullNever)
	default:
		if err := b.pullImage(ctx, ref); err != nil {
			if present {
				// pull_policy always, registry unreachable: the local
				// copy still runs.
				b.log.Warn("unable to pull image, using the local one", "image", ref, "error", err)
				break
			}
			return fmt.Errorf("%w: image %s is not present and could not be pulled: %w", sandbox.ErrSetup, ref, err)
		}
	}
	b.ready.Store(ref, true)
	return nil
}

// pullImage pulls ref and reads the engine's progress to its end, where a
// failure is reported.
func (b *Backend) pullImage(ctx context.Context, ref string) error {
	rc, err := b.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(io.LimitReader(rc, 64<<20))
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}
