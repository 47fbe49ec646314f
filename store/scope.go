package store

import "strings"

// UserScope is the scope of the memory entries and notebooks kept for the
// user in every workspace (Claude Code's user memory). Any other scope is
// a workspace's directory, absolute with its links resolved (its project
// memory).
const UserScope = ""

// Visible returns the scopes seen from the workspace ws: the user's and
// ws's (only the user's when ws is "").
func Visible(ws string) []string {
	if ws == UserScope {
		return []string{UserScope}
	}
	return []string{UserScope, ws}
}

// ScopeName is how a scope is marked in lists and prompts: "user" or
// "workspace".
func ScopeName(scope string) string {
	if scope == UserScope {
		return "user"
	}
	return "workspace"
}

// inScopes returns the SQL condition "col IN (?, …)" for scopes and its
// arguments. No scopes match nothing.
func inScopes(col string, scopes []string) (string, []any) {
	if len(scopes) == 0 {
		return "0", nil
	}
	args := make([]any, len(scopes))
	for i, s := range scopes {
		args[i] = s
	}
	return col + " IN (?" + strings.Repeat(", ?", len(scopes)-1) + ")", args
}
