package config

import "github.com/coderunner/coderunner/lang"

// NativeSection is the native backend's section of the configuration.
type NativeSection struct {
	// AllowRlimitsOnly lets runs go ahead without a usable cgroup
	// (backend.allow_rlimits_only).
	AllowRlimitsOnly bool
	// PerRequest gives every run a new sandbox
	// (backend.sandbox_per_request).
	PerRequest bool
}

// BwrapSection is the bwrap backend's section of the configuration.
type BwrapSection struct {
	// Path is the bwrap binary (backend.bwrap_path); empty means looked
	// up.
	Path string
	// AllowRlimitsOnly lets runs go ahead without a usable cgroup
	// (backend.allow_rlimits_only).
	AllowRlimitsOnly bool
}

// NativeSection returns the native backend's section.
func (c *Config) NativeSection() (NativeSection, error) {
	return NativeSection{AllowRlimitsOnly: c.Backend.AllowRlimitsOnly, PerRequest: c.Backend.SandboxPerRequest}, nil
}

// DockerSection is the docker backend's section of the configuration: the
// docker settings and the language table, which names each language's
// image.
type DockerSection struct {
	Docker
	// Languages is the language table (the built-in one and the
	// configuration's languages).
	Languages *lang.Table
}

// BwrapSection returns the bwrap backend's section.
func (c *Config) BwrapSection() (BwrapSection, error) {
	return BwrapSection{Path: c.Backend.BwrapPath, AllowRlimitsOnly: c.Backend.AllowRlimitsOnly}, nil
}

// DockerSection returns the docker backend's section. It fails when the
// configuration's languages do not make a language table.
func (c *Config) DockerSection() (DockerSection, error) {
	t, err := c.LanguageTable()
	if err != nil {
		return DockerSection{}, err
	}
	return DockerSection{Docker: c.Docker, Languages: t}, nil
}
