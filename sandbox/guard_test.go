package sandbox_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// guardTree writes files (path → content; "->target" makes a link) under
// dir.
func guardTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(data, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeState maps every path under dir to its content (or link target, or
// "dir").
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "->" + target
		case d.IsDir():
			m[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			m[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGitMetadataIsNeverWritten: no write of the file tools' workspace
// lands in git's metadata — the workspace's .git, a nested one, one not
// created yet, where a .git file points, a bare repository, through links
// — and nothing is created there on the way.
func TestGitMetadataIsNeverWritten(t *testing.T) {
	dir := t.TempDir()
	guardTree(t, dir, map[string]string{
		".git/HEAD":                   "ref: refs/heads/main\n",
		".git/config":                 "[core]\n",
		".git/objects/.keep":          "",
		".git/refs/heads/.keep":       "",
		"vendor/lib/.git/HEAD":        "ref: refs/heads/main\n",
		"vendor/lib/.git/config":      "[core]\n",
		"sub/.git":                    "gitdir: ../gitdirs/sub\n",
		"gitdirs/sub/HEAD":            "ref: refs/heads/main\n",
		"gitdirs/sub/commondir":       "../../.git\n",
		"bare.git/HEAD":               "ref: refs/heads/main\n",
		"bare.git/objects/.keep":      "",
		"bare.git/refs/.keep":         "",
		"almost/objects/.keep":        "",
		"almost/refs/.keep":           "",
		"gitlink":                     "->.git",
		"cfglink":                     "->.git/config",
		"src/main.go":                 "package main\n",
		"notgit/HEAD":                 "a file named HEAD alone is not a repository\n",
		"vendor/lib/.git/hooks/.gitk": "",
	})
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	before := treeState(t, dir)

	hook := []byte("#!/bin/sh\ntouch /tmp/pwned\n")
	for _, name := range []string{
		".git/config",
		".git/HEAD",
		".git/commondir",
		".git/hooks/pre-commit", // hooks does not exist yet
		".git/info/attributes",
		".git/objects/info/alternates",
		".GIT/config",
		".Git/hooks/pre-commit",
		".git",
		"vendor/lib/.git/config",
		"vendor/lib/.git/hooks/post-checkout",
		"sub/.git",
		"new/.git/config", // a repository not created yet
		"new/.git",
		"gitdirs/sub/config", // where sub/.git points
		"gitdirs/sub/hooks/pre-commit",
		"bare.git/config",
		"bare.git/hooks/pre-commit",
		"almost/HEAD", // would make almost a repository
		"gitlink/config",
		"gitlink/hooks/pre-commit",
		"cfglink",
		filepath.Join(dir, ".git/config"),
	} {
		err := ws.WriteFile(name, hook, 0o755)
		if !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("WriteFile %s: %v, want refused (ErrDenied)", name, err)
		}
	}
	for _, name := range []string{".git/hooks", "new/.git", "gitlink/info", "bare.git/hooks", "gitdirs/sub/x"} {
		if err := ws.MkdirAll(name, 0o755); !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("MkdirAll %s: %v, want refused (ErrDenied)", name, err)
		}
	}
	if after := treeState(t, dir); !mapsEqual(before, after) {
		t.Errorf("refused writes changed the workspace:\nbefore %v\nafter  %v", before, after)
	}

	// The rest is written, .git is read.
	for _, name := range []string{"src/main.go", "src/new/file.go", "notgit/HEAD", "almost/README", "gitignore/x"} {
		if err := ws.WriteFile(name, []byte("ok\n"), 0o644); err != nil {
			t.Errorf("WriteFile %s: %v", name, err)
		}
	}
	if b, err := ws.ReadFile(".git/config"); err != nil || string(b) != "[core]\n" {
		t.Errorf("ReadFile .git/config = %q, %v", b, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestLinkSwapRaceNeverWins races a goroutine that keeps swapping a link
// between a harmless file and a protected one (.git/config, .env), and a
// directory link between a harmless directory and .git, against writes
// and reads through them: a check-then-follow implementation writes the
// protected file or reads the secret within a few thousand tries.
func TestLinkSwapRaceNeverWins(t *testing.T) {
	dir := t.TempDir()
	guardTree(t, dir, map[string]string{
		".git/HEAD":    "ref: refs/heads/main\n",
		".git/config":  "[core]\n",
		".env":         "SECRET=hunter2\n",
		"harmless":     "harmless\n",
		"plain/config": "plain\n",
		"file":         "->harmless",
		"dir":          "->plain",
	})
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	swap := func(link string, targets ...string) (stop func()) {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tmp := filepath.Join(dir, link+".tmp")
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				_ = os.Remove(tmp)
				if err := os.Symlink(targets[i%len(targets)], tmp); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, filepath.Join(dir, link)); err != nil {
					t.Error(err)
					return
				}
			}
		})
		return func() { close(done); wg.Wait() }
	}
	stop := swap("file", "harmless", ".git/config", ".env")
	stopDir := swap("dir", "plain", ".git")
	deadline := time.Now().Add(time.Second)
	var wrote, read, tries int
	for tries = 0; time.Now().Before(deadline) || tries < 2000; tries++ {
		if ws.WriteFile("file", []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"), 0o644) == nil {
			wrote++
		}
		if ws.WriteFile("dir/config", []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"), 0o644) == nil {
			wrote++
		}
		if b, err := ws.ReadFile("file"); err == nil {
			if bytes.Contains(b, []byte("hunter2")) {
				stop()
				stopDir()
				t.Fatalf("try %d: read the secret through a swapped link", tries)
			}
			read++
		}
	}
	stop()
	stopDir()
	if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config was written through a swapped link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".env")); string(b) != "SECRET=hunter2\n" {
		t.Errorf(".env was written through a swapped link: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/dir")); err == nil {
		t.Error("something was created in .git")
	}
	// Both sides of the race must have been seen.
	if wrote == 0 || read == 0 {
		t.Errorf("race coverage: %d writes, %d reads went through in %d tries; want both", wrote, read, tries)
	}
	t.Logf("%d tries: %d writes and %d reads of the harmless side", tries, wrote, read)
}

// TestHardLinkToDeniedFileIsDenied: a file is denied by identity, so
// another name made beforehand for .env (or for a key of the home
// directory) is refused for reading and writing, and one for a file of
// .git for writing.
func TestHardLinkToDeniedFileIsDenied(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	home := filepath.Join(base, "home")
	guardTree(t, dir, map[string]string{
		".env":        "SECRET=hunter2\n",
		".git/config": "[core]\n",
		"a.txt":       "shared\n",
	})
	guardTree(t, home, map[string]string{".ssh/id_ed25519": "PRIVATE KEY\n"})
	t.Setenv("HOME", home)
	for link, target := range map[string]string{
		"notes.txt": ".env",
		"deep/x.md": ".env",
		"cfg.txt":   ".git/config",
		"b.txt":     "a.txt",
		"key.txt":   filepath.Join(home, ".ssh/id_ed25519"),
	} {
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("hard links: %v", err)
		}
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	for _, name := range []string{"notes.txt", "deep/x.md", "key.txt"} {
		if b, err := ws.ReadFile(name); !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("ReadFile %s = %q, %v; want refused (ErrDenied)", name, b, err)
		}
		if f, err := ws.Open(name); !errors.Is(err, sandbox.ErrDenied) {
			closeIf(f)
			t.Errorf("Open %s: %v; want refused", name, err)
		}
		if err := ws.Check(name, false); !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("Check %s: %v; want refused", name, err)
		}
		if err := ws.WriteFile(name, []byte("x"), 0o644); !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("WriteFile %s: %v; want refused", name, err)
		}
	}
	if _, err := fs.ReadFile(ws.FS(), "notes.txt"); !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("FS ReadFile notes.txt: %v; want refused", err)
	}
	if err := ws.WriteFile("cfg.txt", []byte("[core]\n\tfsmonitor = x\n"), 0o644); !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("WriteFile cfg.txt (a link to .git/config): %v; want refused", err)
	}
	if b, err := ws.ReadFile("cfg.txt"); err != nil || string(b) != "[core]\n" {
		t.Errorf("ReadFile cfg.txt = %q, %v; reading .git is allowed", b, err)
	}
	// Two names for a file the list does not deny are both usable.
	if err := ws.WriteFile("b.txt", []byte("both\n"), 0o644); err != nil {
		t.Errorf("WriteFile b.txt: %v", err)
	}
	if b, err := ws.ReadFile("a.txt"); err != nil || string(b) != "both\n" {
		t.Errorf("ReadFile a.txt = %q, %v", b, err)
	}
	for name, want := range map[string]string{".env": "SECRET=hunter2\n", ".git/config": "[core]\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q, was written through a hard link", name, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".ssh/id_ed25519")); string(b) != "PRIVATE KEY\n" {
		t.Errorf("the home key = %q, was written through a hard link", b)
	}
}

// TestListingsLeaveDeniedNamesOut: the names of denied files, and links to
// them, are not listed by ReadDir or the file system's globbing.
func TestListingsLeaveDeniedNamesOut(t *testing.T) {
	dir := t.TempDir()
	guardTree(t, dir, map[string]string{
		".env":           "SECRET=1\n",
		".env.local":     "SECRET=2\n",
		"sub/server.pem": "KEY\n",
		".ssh/id_rsa":    "KEY\n",
		"env-link":       "->.env",
		"README":         "hi\n",
		"sub/ok.txt":     "ok\n",
	})
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	names := func(entries []fs.DirEntry) []string {
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	root, err := ws.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(root), []string{"README", "sub"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir . = %v, want %v", got, want)
	}
	sub, err := fs.ReadDir(ws.FS(), "sub")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(sub), []string{"ok.txt"}; !slices.Equal(got, want) {
		t.Errorf("FS ReadDir sub = %v, want %v", got, want)
	}
	for _, pattern := range []string{"*", ".*", "**", ".env", "sub/server.pem", "env-link", ".ssh/*"} {
		matches, err := fs.Glob(ws.FS(), pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if m != "README" && m != "sub" && m != "sub/ok.txt" {
				t.Errorf("glob %q lists %q", pattern, m)
			}
		}
	}
}

// TestReadingAPipeDoesNotBlock: a FIFO in the workspace is refused, not
// read forever.
func TestReadingAPipeDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	done := make(chan error, 2)
	go func() { _, err := ws.ReadFile("fifo"); done <- err }()
	go func() { done <- ws.WriteFile("fifo", []byte("x"), 0o644) }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Error("a FIFO was used as a file")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a FIFO blocked")
		}
	}
}
