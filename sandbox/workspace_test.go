package sandbox_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// setup makes a workspace beside a directory "outside" holding a secret:
//
//	ws/inner/file.txt      "inside"
//	ws/in -> inner         (stays inside)
//	ws/out -> ../outside   (leads out, relative)
//	ws/abs -> /…/outside   (leads out, absolute)
//	ws/outfile -> ../outside/secret
//	outside/secret         "SECRET"
func setup(t *testing.T) (*sandbox.Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(dir, "inner"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "inner", "file.txt"), "inside")
	write(t, filepath.Join(outside, "secret"), "SECRET")
	links := map[string]string{"in": "inner", "out": "../outside", "abs": outside, "outfile": "../outside/secret"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir, outside
}

func write(t *testing.T, name, s string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRel(t *testing.T) {
	ws, dir, _ := setup(t)
	tests := []struct {
		name   string
		want   string
		reason string // non-empty: want an EscapeError with it
	}{
		{"", ".", ""},
		{".", ".", ""},
		{"inner/./file.txt", "inner/file.txt", ""},
		{"inner/../inner/file.txt", "inner/file.txt", ""},
		{"inner/", "inner", ""},
		{dir, ".", ""},
		{dir + "/inner/file.txt", "inner/file.txt", ""},
		{"../x", "", sandbox.ReasonDotDot},
		{"inner/../../x", "", sandbox.ReasonDotDot},
		{"..", "", sandbox.ReasonDotDot},
		{"/etc/passwd", "", sandbox.ReasonAbsolute},
		{dir + "/../outside/secret", "", sandbox.ReasonAbsolute},
		{dir + "x/file", "", sandbox.ReasonAbsolute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Rel(tt.name)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Errorf("Rel = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var ee *sandbox.EscapeError
			if !errors.As(err, &ee) || ee.Reason != tt.reason || ee.Path != tt.name {
				t.Errorf("Rel error = %v, want an EscapeError for %q that %s", err, tt.name, tt.reason)
			}
		})
	}
}

func TestEscapesAreRefused(t *testing.T) {
	ws, _, outside := setup(t)
	walk := func(n string) error {
		return ws.Walk(context.Background(), n, func(string, fs.DirEntry, error) error { return nil })
	}
	fileOps := map[string]func(name string) error{
		"Open":      func(n string) error { f, err := ws.Open(n); closeIf(f); return err },
		"Stat":      func(n string) error { _, err := ws.Stat(n); return err },
		"ReadFile":  func(n string) error { _, err := ws.ReadFile(n); return err },
		"WriteFile": func(n string) error { return ws.WriteFile(n, []byte("pwned"), 0o644) },
	}
	dirOps := map[string]func(name string) error{
		"ReadDir":  func(n string) error { _, err := ws.ReadDir(n); return err },
		"MkdirAll": func(n string) error { return ws.MkdirAll(n, 0o755) },
		"Walk":     walk,
	}
	type path struct{ name, reason string }
	files := []path{
		{"../outside/secret", sandbox.ReasonDotDot},
		{"inner/../../x", sandbox.ReasonDotDot},
		{"/etc/passwd", sandbox.ReasonAbsolute},
		{filepath.Join(outside, "secret"), sandbox.ReasonAbsolute},
		{"out/secret", sandbox.ReasonSymlink},
		{"abs/secret", sandbox.ReasonSymlink},
		{"outfile", sandbox.ReasonSymlink},
		{"out/new/file", sandbox.ReasonSymlink},
	}
	dirs := []path{
		{"../outside", sandbox.ReasonDotDot},
		{"/etc", sandbox.ReasonAbsolute},
		{outside, sandbox.ReasonAbsolute},
		{"out", sandbox.ReasonSymlink},
		{"abs", sandbox.ReasonSymlink},
		{"out/new/deeper", sandbox.ReasonSymlink},
	}
	check := func(op string, do func(string) error, p path) {
		t.Run(op+"/"+p.name, func(t *testing.T) {
			err := do(p.name)
			if !errors.Is(err, sandbox.ErrEscape) {
				t.Fatalf("%s(%q) = %v, want ErrEscape", op, p.name, err)
			}
			var ee *sandbox.EscapeError
			if !errors.As(err, &ee) || ee.Reason != p.reason {
				t.Errorf("%s(%q) = %v, want reason %q", op, p.name, err, p.reason)
			}
			if !strings.Contains(err.Error(), p.name) {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
	for op, do := range fileOps {
		for _, p := range files {
			check(op, do, p)
		}
	}
	for op, do := range dirOps {
		for _, p := range dirs {
			check(op, do, p)
		}
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Errorf("outside holds %d entries (%v), want only the secret", len(entries), err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "SECRET" {
		t.Errorf("outside secret = %q, was overwritten", b)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func TestLinksInsideAreFollowed(t *testing.T) {
	ws, dir, _ := setup(t)
	if b, err := ws.ReadFile("in/file.txt"); err != nil || string(b) != "inside" {
		t.Errorf("ReadFile(in/file.txt) = %q, %v; want inside", b, err)
	}
	if err := ws.WriteFile("in/new/made.txt", []byte("new"), 0o644); err != nil {
		t.Fatalf("WriteFile through an inside link: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "inner", "new", "made.txt")); err != nil || string(b) != "new" {
		t.Errorf("written file = %q, %v", b, err)
	}
	if b, err := ws.ReadFile(dir + "/inner/file.txt"); err != nil || string(b) != "inside" {
		t.Errorf("ReadFile(absolute inside) = %q, %v", b, err)
	}
	fi, err := ws.Lstat("out")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(out) = %v, %v; want the link itself", fi, err)
	}
	if target, err := ws.Readlink("out"); err != nil || target != "../outside" {
		t.Errorf("Readlink(out) = %q, %v", target, err)
	}
}

func TestWalkReportsLinksWithoutFollowing(t *testing.T) {
	ws, _, _ := setup(t)
	var got []string
	err := ws.Walk(context.Background(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ". abs in inner inner/file.txt out outfile"
	if strings.Join(got, " ") != want {
		t.Errorf("walk = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestWalkStopsWhenContextDone(t *testing.T) {
	ws, _, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := ws.Walk(ctx, ".", func(string, fs.DirEntry, error) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Walk = %v, want context.Canceled", err)
	}
}

func TestNotFoundKeepsPathRelative(t *testing.T) {
	ws, dir, _ := setup(t)
	_, err := ws.ReadFile("inner/missing.txt")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
	if strings.Contains(err.Error(), dir) {
		t.Errorf("error %q shows the host path", err)
	}
}

// TestSwappedLinkNeverLeadsOut races a goroutine that keeps pointing a link
// at a directory inside and then one outside against reads and writes
// through it: a check-then-use implementation leaks or writes outside.
func TestSwappedLinkNeverLeadsOut(t *testing.T) {
	ws, dir, outside := setup(t)
	link := filepath.Join(dir, "swap")
	tmp := filepath.Join(dir, "swap.tmp")
	if err := os.Symlink("inner", link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		targets := []string{"inner", outside}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Rename over the link so it always exists and only its
			// target changes.
			_ = os.Remove(tmp)
			if err := os.Symlink(targets[i%2], tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, link); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	var inside, refused int
	for time.Now().Before(deadline) {
		b, err := ws.ReadFile("swap/secret")
		if err == nil {
			t.Fatalf("read %q through a link to outside", b)
		}
		if errors.Is(err, sandbox.ErrEscape) {
			refused++
		}
		if f, err := ws.Open("swap/file.txt"); err == nil {
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) != "inside" {
				t.Fatalf("read %q, want inside", data)
			}
			inside++
		}
		_ = ws.WriteFile("swap/written", []byte("pwned"), 0o644)
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(outside, "written")); err == nil {
		t.Fatal("a write went through the swapped link to outside")
	}
	// Both sides of the race must have been seen, or the test proved
	// nothing.
	if refused == 0 || inside == 0 {
		t.Errorf("race coverage: %d refused, %d inside; want both", refused, inside)
	}
	t.Logf("%d refused, %d inside", refused, inside)
}

func TestWalkStartsThroughALinkInside(t *testing.T) {
	ws, _, _ := setup(t)
	var got []string
	err := ws.Walk(context.Background(), "in", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "in in/file.txt"; strings.Join(got, " ") != want {
		t.Errorf("walk = %q, want %q", strings.Join(got, " "), want)
	}
}
