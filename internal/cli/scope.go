package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/store"
)

// scopeFlags are the --scope and -C of memory and notes: which of the
// user's scope and the workspace's a command lists, adds to or removes
// from.
type scopeFlags struct {
	scope     string // "", "user" or "workspace"
	workspace string
}

func (f *scopeFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.scope, "scope", "", `"workspace" (this workspace's) or "user" (every workspace's); list and rm see both unless told, add writes to the workspace's`)
	cmd.PersistentFlags().StringVarP(&f.workspace, "workspace", "C", "", "the workspace whose scope to use (default: the current directory)")
}

// dir is the workspace's scope: its directory, links resolved.
func (f *scopeFlags) dir() (string, error) {
	dir, err := agent.WorkspaceDir(f.workspace)
	if err != nil {
		return "", usageError(err)
	}
	return agent.MemoryScope(dir), nil
}

// scopes is what list and rm see: both scopes, or the one --scope names.
func (f *scopeFlags) scopes() ([]string, error) {
	if f.scope == "user" {
		return []string{store.UserScope}, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	ws, err := f.dir()
	if err != nil {
		return nil, err
	}
	if f.scope == "workspace" {
		return []string{ws}, nil
	}
	return store.Visible(ws), nil
}

// target is the scope add writes to: the workspace's unless --scope user.
func (f *scopeFlags) target() (string, error) {
	if f.scope == "user" {
		return store.UserScope, nil
	}
	if err := f.check(); err != nil {
		return "", err
	}
	return f.dir()
}

func (f *scopeFlags) check() error {
	switch f.scope {
	case "", "user", "workspace":
		return nil
	}
	return usageError(fmt.Errorf(`--scope %q: use "workspace" or "user"`, f.scope))
}
