package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFindGitDoesNotWaitOnAFIFO: every command in bubblewrap first walks
// the workspace for .git (findGit) and reads each gitdir file. A command
// may leave a FIFO named .git in a subdirectory (nothing keeps it from
// making one there); opening it to read waited for a writer, so every
// later command of every thread in the workspace hung before it started.
// A .git that is neither a directory nor a regular file is left out of
// the walk's reading, and the walk ends.
func TestFindGitDoesNotWaitOnAFIFO(t *testing.T) {
	ws := gitTree(t, map[string]string{".git/HEAD": "x", "sub/": ""})
	if err := syscall.Mkfifo(filepath.Join(ws, "sub", ".git"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := findGit(context.Background(), ws, DefaultDenyList())
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Let the walk go: open the FIFO for writing once.
		if f, err := os.OpenFile(filepath.Join(ws, "sub", ".git"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("findGit waited on a FIFO named .git for 10 s")
	}
}
