package web

import (
	"os"
	"testing"
)

// ServeFrom makes the server serve the page's files from dir (a checkout's
// web/static) until the test ends or the returned func is called, so that
// a benchmark compares two versions of the page in one run, interleaved.
func ServeFrom(t *testing.T, dir string) (restore func()) {
	t.Helper()
	m, err := load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatalf("the page's files in %s: %v", dir, err)
	}
	if _, ok := m["/"]; !ok {
		t.Fatalf("%s has no index.html", dir)
	}
	old := assets.Load()
	assets.Store(&m)
	restore = func() { assets.Store(old) }
	t.Cleanup(restore)
	return restore
}
