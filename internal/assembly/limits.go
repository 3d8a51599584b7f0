package assembly

import (
	"log/slog"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox"
)

// BackendOptions are the options every backend is built with, for Open
// and for doctor's probes.
func BackendOptions(cfg *config.Config, log *slog.Logger) backend.Options {
	return backend.Options{Logger: log, Config: cfg, TempDir: cfg.Backend.WorkDir}
}

// DefaultLimits are the limits of a run that names none (run, /v1/run,
// execute_code, the Go API): the configuration's limits.run section, whose
// defaults are the contract's, with the contract's defaults for any field
// it leaves zero.
func DefaultLimits(cfg *config.Config) execute.ExecutionLimits {
	d := cfg.Limits.Run
	return execute.ExecutionLimits{
		TimeLimit:      d.Timeout.Std().Seconds(),
		MemoryLimit:    d.MemoryMB,
		CPULimit:       d.CPUCores,
		MaxOutputChars: d.MaxOutputChars,
		Pids:           d.MaxProcesses,
	}.WithDefaults()
}

// JudgeOptions are the judge's bounds from the configuration (coderunner
// judge, /v1/judge, judge_code and the Go API), logging to log.
func JudgeOptions(cfg *config.Config, log *slog.Logger) judge.Options {
	l := cfg.Limits
	return judge.Options{
		Logger:             log,
		MaxOutputKB:        l.MaxOutputSizeKB,
		MaxOutputCeilingKB: l.MaxOutputCeilingKB,
		KeptOutputKB:       l.KeptOutputKB,
		KeptOutputTotalKB:  l.KeptOutputTotalKB,
		ToolLimits: sandbox.Limits{
			WallTime: l.Checker.Timeout.Std(),
			CPUTime:  l.Checker.Timeout.Std(),
			Memory:   int64(l.Checker.MemoryMB) * sandbox.MiB,
		},
	}
}

// CompileLimits bound every compile step, the executor's and the
// engine's alike: the configuration's limits.compile section, whose
// defaults are runner.DefaultCompileLimits'.
func CompileLimits(cfg *config.Config) sandbox.Limits { return cfg.Limits.Compile.Sandbox() }

// SandboxLimits are the limits of a run that no request names: open
// files, and the sizes of /workspace and /tmp.
func SandboxLimits(cfg *config.Config) sandbox.Limits {
	return sandbox.Limits{
		OpenFiles:     cfg.Backend.OpenFiles,
		WorkspaceSize: int64(cfg.Backend.WorkspaceSizeMB) * sandbox.MiB,
		TmpSize:       int64(cfg.Backend.TmpSizeMB) * sandbox.MiB,
	}
}

// InvokeLimits are the limits of an /execute run: SandboxLimits, with the
// memory and processes of limits.run and the output cap of
// limits.executor.
func InvokeLimits(cfg *config.Config) sandbox.Limits {
	l := SandboxLimits(cfg)
	l.Memory = int64(cfg.Limits.Run.MemoryMB) * sandbox.MiB
	l.Processes = cfg.Limits.Run.MaxProcesses
	l.OutputBytes = int64(cfg.Limits.Executor.MaxOutputMB) * sandbox.MiB
	return l
}
