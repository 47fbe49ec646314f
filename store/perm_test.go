package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/record"
)

// TestANewDatabaseIsReadableOnlyByItsOwner: rein.db keeps conversations and
// the unredacted before-image of every file a tool replaced (undo), so a
// database rein creates, and the WAL beside it, are 0600 even in a
// directory others may read (REIN_DB or --db pointing into a project).
func TestANewDatabaseIsReadableOnlyByItsOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rein.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateThread(ctx, record.Thread{Settings: record.Settings{Workspace: "/w"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rein.db", "rein.db-wal", "rein.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&0o077 != 0 {
			t.Errorf("%s is %v: others can read the conversations and the files undo keeps; want 0600", name, got)
		}
	}
}
