package sandbox

import "fmt"

// Remove removes the named file (a link is removed, not followed), as
// undo removes a file a turn created. It is refused where a write would
// be: outside the workspace, on the deny list, in git's metadata.
func (w *Workspace) Remove(name string) error {
	rel, err := w.Rel(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("remove %q: that is the workspace root; only a file in it can be removed", name)
	}
	if err := w.check(name, rel, true); err != nil {
		return err
	}
	return mapErr(name, w.root.Remove(rel))
}
