package agent

import "path/filepath"

// MemoryScope returns the scope of the memory entries and notebooks of the
// workspace dir (an absolute directory): its path with links resolved, as
// the sandbox roots it, so a workspace reached through a link shares its
// memory. A dir whose links cannot be resolved is its own scope.
func MemoryScope(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
