package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitTree writes files (path → content; a path ending in "/" is a
// directory) under a new workspace and returns it.
func gitTree(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	for p, content := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestBwrapKeepsEveryGitReadOnly: a command cannot change a repository of
// the workspace so that the user's next git runs its code, whether the
// path exists or not, and cannot make a workspace without .git a
// repository (DESIGN §7.3). The workspace stays writable otherwise.
func TestBwrapKeepsEveryGitReadOnly(t *testing.T) {
	r := bwrapRunner(t)
	repo := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/objects/": "", ".git/refs/": ""}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range repo {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		command string
		// absent must not exist on the host afterwards; same must keep
		// their content.
		absent []string
		same   []string
	}{
		{"a hook in an existing hooks directory", with(map[string]string{".git/hooks/": ""}),
			"echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
			[]string{".git/hooks/pre-commit"}, nil},
		{"a hook where there is no hooks directory", repo,
			"mkdir -p .git/hooks && echo 'touch /tmp/pwned' > .git/hooks/pre-commit",
			[]string{".git/hooks"}, nil},
		{"commondir", repo, "echo /tmp/evil > .git/commondir", []string{".git/commondir"}, nil},
		{"core.fsmonitor in the config", repo,
			"printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config", nil, []string{".git/config"}},
		{"info", repo, "mkdir -p .git/info && echo x > .git/info/attributes", []string{".git/info"}, nil},
		{"alternates", repo, "mkdir -p .git/objects/info && echo /tmp/x > .git/objects/info/alternates", []string{".git/objects/info"}, nil},
		{".git moved aside", repo, "mv .git .git.old; mkdir .git && echo x > .git/config",
			[]string{".git.old"}, []string{".git/config"}},
		{"a nested repository", with(map[string]string{"sub/.git/HEAD": "ref: x\n"}),
			"mkdir -p sub/.git/hooks && echo x > sub/.git/hooks/post-checkout", []string{"sub/.git/hooks"}, nil},
		{"no .git: a new repository", map[string]string{"a.txt": "a"},
			"mkdir -p .git/hooks && echo x > .git/hooks/pre-commit; printf '[core]\\nfsmonitor = x\\n' > .git/config",
			[]string{".git"}, nil},
		{"no .git: a gitdir file", map[string]string{"a.txt": "a", "store/HEAD": "x"},
			"echo 'gitdir: store' > .git", []string{".git"}, nil},
		{"a gitdir file pointed elsewhere", map[string]string{".git": "gitdir: store\n", "store/HEAD": "x", "store/config": "[core]\n", "evil/": ""},
			"echo 'gitdir: evil' > .git", nil, []string{".git"}},
		{"the gitdir a file names", map[string]string{".git": "gitdir: store\n", "store/HEAD": "x", "store/config": "[core]\n"},
			"mkdir -p store/hooks && echo x > store/hooks/pre-commit; echo '[core] fsmonitor = x' >> store/config",
			[]string{"store/hooks"}, []string{"store/config"}},
		{"the commondir of that gitdir", map[string]string{".git": "gitdir: wt/one\n", "wt/one/HEAD": "x", "wt/one/commondir": "../../main\n", "main/config": "[core]\n"},
			"echo '[core] fsmonitor = x' >> main/config; mkdir -p main/hooks", []string{"main/hooks"}, []string{"main/config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := gitTree(t, tc.files)
			before := map[string][]byte{}
			for _, p := range tc.same {
				before[p], _ = os.ReadFile(filepath.Join(ws, p))
			}
			var out bytes.Buffer
			res, err := r.Run(context.Background(), Command{
				Args:      []string{"sh", "-c", tc.command + "; echo ok > written.txt"},
				Workspace: ws, Output: &out,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.absent {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s was created on the host (exit %d, output %q)", p, res.ExitCode, out.String())
				}
			}
			for _, p := range tc.same {
				if got, _ := os.ReadFile(filepath.Join(ws, p)); !bytes.Equal(got, before[p]) {
					t.Errorf("%s changed: %q, was %q (output %q)", p, got, before[p], out.String())
				}
			}
			if b, err := os.ReadFile(filepath.Join(ws, "written.txt")); err != nil || string(b) != "ok\n" {
				t.Errorf("the rest of the workspace was not writable: %v (output %q)", err, out.String())
			}
		})
	}
}

func TestBwrapRefusesWhatCannotBeKeptReadOnly(t *testing.T) {
	r := bwrapRunner(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ws string)
		want  string
	}{
		{".git a link", func(t *testing.T, ws string) {
			if err := os.Mkdir(filepath.Join(ws, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real", filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
		}, ".git is a symbolic link"},
		{"a gitdir that does not exist", func(t *testing.T, ws string) {
			if err := os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: missing/dir\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "missing/dir, which does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			tc.setup(t, ws)
			_, err := r.Run(context.Background(), Command{Args: []string{"true"}, Workspace: ws})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestBwrapPlaceholderGitIsRemoved: the mount point of a workspace's
// missing .git does not outlive the command, and a repository can be
// made there afterwards.
func TestBwrapPlaceholderGitIsRemoved(t *testing.T) {
	r := bwrapRunner(t)
	ws := t.TempDir()
	var out bytes.Buffer
	res, err := r.Run(context.Background(), Command{Args: []string{"sh", "-c", "ls -a .git && touch .git/x"}, Workspace: ws, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 {
		t.Errorf("the placeholder .git was writable: %q", out.String())
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Error("the placeholder .git was left on the host")
	}
}

func TestFindGitSkipsWhatTheDenyListMasks(t *testing.T) {
	ws := gitTree(t, map[string]string{".ssh/.git/HEAD": "x", "a/.git/HEAD": "x", ".git/HEAD": "x"})
	g, err := findGit(context.Background(), ws, DefaultDenyList())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, "a/.git")}
	if strings.Join(g.ro, ",") != strings.Join(want, ",") || g.placeholder != "" {
		t.Errorf("findGit = %+v, want ro %q", g, want)
	}
}

// TestFindGitThroughALinkedWorkspace: a workspace given by a link to it is
// walked all the same, and its repositories bound where the sandbox shows
// them.
func TestFindGitThroughALinkedWorkspace(t *testing.T) {
	real := gitTree(t, map[string]string{".git/HEAD": "x", "a/.git/HEAD": "x"})
	ws := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	g, err := findGit(context.Background(), ws, DefaultDenyList())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, "a/.git")}
	if strings.Join(g.ro, ",") != strings.Join(want, ",") || g.placeholder != "" {
		t.Errorf("findGit = %+v, want ro %q", g, want)
	}
}
