package undo_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/undo"
)

// TestRestoreNeverFollowsALinkOutOfTheWorkspace: after the turn, the
// directory it wrote in is swapped for a link to a directory outside the
// workspace holding the same files (so nothing looks changed). Undo, even
// forced, must neither write the before-image there nor remove the file the
// turn created there.
func TestRestoreNeverFollowsALinkOutOfTheWorkspace(t *testing.T) {
	for _, force := range []bool{false, true} {
		f := newFixture(t)
		if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		f.write("sub/old.txt", "before\n")
		f.call("turn_1", "write_file", map[string]any{"path": "sub/old.txt", "content": "by the turn\n"})
		f.call("turn_1", "write_file", map[string]any{"path": "sub/new.txt", "content": "created\n"})

		outside := t.TempDir()
		for name, content := range map[string]string{"old.txt": "by the turn\n", "new.txt": "created\n"} {
			if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.RemoveAll(filepath.Join(f.dir, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(f.dir, "sub")); err != nil {
			t.Fatal(err)
		}
		_, err := f.restore(undo.Options{Force: force})
		if err == nil {
			t.Errorf("force %v: undo through a link out of the workspace succeeded", force)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "old.txt")); string(b) != "by the turn\n" {
			t.Errorf("force %v: the file outside the workspace was written: %q", force, b)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err != nil {
			t.Errorf("force %v: the file outside the workspace was removed: %v", force, err)
		}
	}
}
