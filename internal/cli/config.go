package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/sandbox"
)

// loadConfig reads the config file ($XDG_CONFIG_HOME/rein/config.toml) for
// a command, which reads it once and hands it to what needs it: the
// provider (provider.Config.File), the MCP servers and the sandbox. A file
// that cannot be read is an error, never the defaults: its [sandbox] table
// may deny what the defaults allow.
func loadConfig() (*config.File, error) {
	f, err := config.LoadDefault(nil)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return f, nil
}

// sandboxOptions returns the config's [sandbox] table as package sandbox
// takes it; a nil f is the defaults.
func sandboxOptions(f *config.File) sandbox.Options {
	if f == nil {
		return sandbox.Options{}
	}
	return f.Sandbox.Options()
}

// openWorkspace opens the workspace at dir with the deny list of o.
func openWorkspace(dir string, o sandbox.Options) (*sandbox.Workspace, error) {
	ws, err := sandbox.OpenOptions(dir, o)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return ws, nil
}

// newRunner returns the runner of the commands of exec and code_execution
// in the sandbox mode mode, with the limits of o, on this machine.
func newRunner(mode sandbox.Mode, o sandbox.Options) *sandbox.Runner {
	return agent.NewRunner(mode, o, detectSandbox)
}

// limitsReport is what the commands of a runner run under, as `rein tools
// --json` reports it, keyed as the config's [sandbox] table; a limit of -1
// is none.
type limitsReport struct {
	// Enforced reports whether the limits apply here (prlimit works);
	// ProcessesEnforced whether max_processes does too.
	Enforced          bool  `json:"enforced"`
	ProcessesEnforced bool  `json:"processes_enforced"`
	Memory            int64 `json:"memory"`
	// CPUTime is a duration, "timeout" (the call's) or "none".
	CPUTime      string `json:"cpu_time"`
	MaxProcesses int    `json:"max_processes"`
	MaxFileSize  int64  `json:"max_file_size"`
	MaxOpenFiles int    `json:"max_open_files"`
	// Configured are the limits the config file sets.
	Configured []string `json:"configured"`
}

func newLimitsReport(r *sandbox.Runner, f *config.File) limitsReport {
	l, ok := r.Limits()
	rep := limitsReport{Enforced: ok, ProcessesEnforced: ok && r.ProcLimit(),
		Memory: max(l.Memory, -1), CPUTime: cpuTime(l.CPU), MaxProcesses: max(l.Procs, -1),
		MaxFileSize: max(l.FileSize, -1), MaxOpenFiles: max(l.OpenFiles, -1), Configured: []string{}}
	if f != nil {
		rep.Configured = append(rep.Configured, f.Sandbox.LimitsSet()...)
	}
	return rep
}

func cpuTime(d time.Duration) string {
	switch {
	case d == 0:
		return "timeout"
	case d < 0:
		return "none"
	}
	return d.String()
}

// describeLimits says in a line what a runner's commands run under, by
// the keys of the config's [sandbox] table, and which limits the config
// sets; or that none apply here.
func describeLimits(r *sandbox.Runner, f *config.File) string {
	rep := newLimitsReport(r, f)
	if !rep.Enforced {
		s := r.Report().LimitsReason
		switch {
		case s == "":
			s = "none: prlimit does not work here"
		case !strings.HasPrefix(s, "none"):
			s = "none: " + s
		}
		if len(rep.Configured) > 0 {
			s += "; the config's [sandbox] limits (" + strings.Join(rep.Configured, ", ") + ") are not applied"
		}
		return s
	}
	size := func(n int64) string {
		if n < 0 {
			return "none"
		}
		return sandbox.FormatBytes(n)
	}
	count := func(n int) string {
		if n < 0 {
			return "none"
		}
		return fmt.Sprint(n)
	}
	cpu := rep.CPUTime
	if cpu == "timeout" {
		cpu = "the call's timeout"
	}
	procs := count(rep.MaxProcesses) + " per command"
	if !rep.ProcessesEnforced && rep.MaxProcesses > 0 {
		procs += " (not enforced here)"
	}
	s := fmt.Sprintf("memory %s, cpu_time %s, max_file_size %s, max_open_files %s per process; max_processes %s",
		size(rep.Memory), cpu, size(rep.MaxFileSize), count(rep.MaxOpenFiles), procs)
	if len(rep.Configured) > 0 {
		s += "; set by the config: " + strings.Join(rep.Configured, ", ")
	}
	return s
}

// denyReport is a workspace's deny list, as `rein tools --json` reports
// it: the patterns neither read nor written, those only not written, and
// those exempt.
type denyReport struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
	Allow []string `json:"allow"`
}

// newDenyReport describes the deny list d, compiled with the exemptions
// allow. A pattern that allow lists as it is was taken out of d by
// sandbox.NewDenyList, so d's patterns are already without it.
func newDenyReport(d *sandbox.DenyList, allow []string) denyReport {
	read, write := d.Patterns()
	rep := denyReport{Read: []string{}, Write: []string{}, Allow: []string{}}
	rep.Read = append(rep.Read, read...)
	rep.Write = append(rep.Write, write...)
	rep.Allow = append(rep.Allow, allow...)
	return rep
}

func (d denyReport) String() string {
	list := func(ps []string) string {
		if len(ps) == 0 {
			return "nothing"
		}
		return strings.Join(ps, ", ")
	}
	s := "neither read nor written: " + list(d.Read) + "; read-only: " + list(d.Write)
	if len(d.Allow) > 0 {
		s += "; exempt: " + list(d.Allow)
	}
	return s
}
