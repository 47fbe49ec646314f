package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// linkTree makes dir a workspace with denied files and other names (hard
// links) for them, and HOME a directory with a key linked into dir.
func linkTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	files := map[string]string{
		filepath.Join(dir, ".env"):              "SECRET=env-secret\n",
		filepath.Join(dir, ".ssh/id_ed25519"):   "ssh-secret\n",
		filepath.Join(dir, ".git/config"):       "[core]\n",
		filepath.Join(dir, "a.txt"):             "plain\n",
		filepath.Join(home, ".aws/credentials"): "aws-secret\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	for link, target := range map[string]string{
		"notes.txt":  filepath.Join(dir, ".env"),
		"docs/k.txt": filepath.Join(dir, ".ssh/id_ed25519"),
		"cfg.txt":    filepath.Join(dir, ".git/config"),
		"b.txt":      filepath.Join(dir, "a.txt"),
		"aws.txt":    filepath.Join(home, ".aws/credentials"),
	} {
		p := filepath.Join(dir, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(target, p); err != nil {
			t.Skipf("hard links: %v", err)
		}
	}
	return dir
}

// TestMasksCoverHardLinks: a command's sandbox masks the other names of
// denied files as it masks the files, and binds those of git's metadata
// read-only (DESIGN §7.4: a file is denied by identity).
func TestMasksCoverHardLinks(t *testing.T) {
	dir := linkTree(t)
	got, err := DefaultDenyList().masks(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []mask{
		{path: filepath.Join(dir, "notes.txt")},
		{path: filepath.Join(dir, "docs/k.txt")},
		{path: filepath.Join(dir, "aws.txt")},
		{path: filepath.Join(dir, "cfg.txt"), writeOnly: true},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("masks lack %+v: %+v", want, got)
		}
	}
	if slices.ContainsFunc(got, func(m mask) bool { return strings.HasSuffix(m.path, "a.txt") || strings.HasSuffix(m.path, "b.txt") }) {
		t.Errorf("masks cover two names of a file not denied: %+v", got)
	}
	ro, err := DefaultDenyList().masks(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ro, func(m mask) bool { return m.writeOnly }) || !slices.Contains(ro, mask{path: filepath.Join(dir, "notes.txt")}) {
		t.Errorf("read-only masks %+v", ro)
	}
}

func TestBwrapMasksHardLinks(t *testing.T) {
	r := Detect()
	if !r.Isolated() {
		t.Skipf("bubblewrap is not usable here: %s", r)
	}
	dir := linkTree(t)
	run := NewModeRunner(r, ModeWorkspaceWrite)
	script := func(s string) (int, string) {
		var out bytes.Buffer
		res, err := run.Run(context.Background(), Command{Args: []string{"sh", "-c", s}, Workspace: dir, Output: &out, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return res.ExitCode, out.String()
	}
	for _, s := range []string{"cat notes.txt", "cat docs/k.txt", "cat aws.txt", "echo '[core] fsmonitor = x' >> cfg.txt"} {
		code, out := script(s)
		if code == 0 || strings.Contains(out, "secret") {
			t.Errorf("%q: exit %d, %q; want refused", s, code, out)
		}
	}
	if code, out := script("cat cfg.txt b.txt"); code != 0 || out != "[core]\nplain\n" {
		t.Errorf("cat cfg.txt b.txt: exit %d, %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config = %q, written through a hard link", b)
	}
}
