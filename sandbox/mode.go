package sandbox

import "fmt"

// Mode is a thread's sandbox mode (DESIGN §7.4): how much the commands and
// file tools of its turns may change.
type Mode string

// Sandbox modes.
const (
	// ModeReadOnly lets nothing write the workspace: the file tools that
	// write are not offered, and commands run inside bubblewrap with the
	// workspace bound read-only. Without bubblewrap commands do not run.
	ModeReadOnly Mode = "read-only"
	// ModeWorkspaceWrite lets commands write the workspace and nothing
	// else: inside bubblewrap when it works, otherwise on the host after
	// the user approves each command. It is the default.
	ModeWorkspaceWrite Mode = "workspace-write"
	// ModeFullAccess runs commands on the host, without bubblewrap and
	// without asking: they see the network and can write wherever the user
	// can. The environment is still an allow-list, and no process a
	// command starts outlives it.
	ModeFullAccess Mode = "full-access"
)

// ParseMode parses a mode name; "" is workspace-write.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeWorkspaceWrite, nil
	case ModeReadOnly, ModeWorkspaceWrite, ModeFullAccess:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: use read-only, workspace-write or full-access", s)
}

// Describe says in a sentence what the mode means on a machine where
// Detect found r: what commands can do, and whether they run at all.
func (m Mode) Describe(r Report) string {
	switch m {
	case ModeReadOnly:
		if !r.Isolated() {
			return "nothing writes the workspace: the file tools that write are off, and exec and code_execution are off too, since without bubblewrap the workspace cannot be kept read-only for them"
		}
		return "nothing writes the workspace: the file tools that write are off, and commands run inside bubblewrap with the workspace read-only"
	case ModeFullAccess:
		return "commands run on the host without a sandbox and without asking: with the network, and able to write wherever you can (their environment is still an allow-list, and no process they start outlives them)"
	}
	if !r.Isolated() {
		return "the file tools write the workspace; commands run on the host without a sandbox, each after you approve it"
	}
	return "the file tools and commands write the workspace and nothing else; commands run inside bubblewrap without network"
}
