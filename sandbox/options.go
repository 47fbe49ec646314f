package sandbox

// Options adjust the sandbox's defaults; the zero value keeps them all.
// OpenOptions takes Deny for the workspace, whose deny list the file tools
// and the exec tools follow; NewRunnerOptions takes Limits for the
// commands it runs.
type Options struct {
	// Limits bound each command's processes (memory, CPU time, processes,
	// file size, open files).
	Limits Limits
	// Deny adds paths to the deny list or exempts them from it.
	Deny DenyRules
	// Env names further variables of rein's environment that commands
	// see, beside CommandEnvNames and LC_*; each must pass CheckEnvName.
	// A name listed here passes whatever it holds.
	Env []string
}
