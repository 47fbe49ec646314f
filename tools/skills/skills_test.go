package skills

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skill(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

// fixture makes a workspace and a user skills directory:
// the workspace's "release" overrides the user's.
func fixture(t *testing.T) (ws, user string) {
	t.Helper()
	ws, user = t.TempDir(), t.TempDir()
	wsk := filepath.Join(ws, ".rein", "skills")
	write(t, filepath.Join(wsk, "release", FileName), skill("release", "Cut a release -\n  tag, changelog, publish.", "# Release\nRun make release.\n"))
	write(t, filepath.Join(wsk, "release", "checklist.md"), "- bump version\n")
	write(t, filepath.Join(wsk, "release", "scripts", "tag.sh"), "git tag\n")
	write(t, filepath.Join(wsk, "release", "logo.bin"), "\x00\x01")
	write(t, filepath.Join(user, "release", FileName), skill("release", "the user's release", "old"))
	write(t, filepath.Join(user, "review", FileName), skill("review", "Review a pull request", "Read the diff."))
	write(t, filepath.Join(user, "nodesc", FileName), "---\nname: nodesc\n---\nx")
	write(t, filepath.Join(user, "nofront", FileName), "# just markdown")
	write(t, filepath.Join(user, "unclosed", FileName), "---\nname: u\ndescription: d\n")
	write(t, filepath.Join(user, "notaskill", "README.md"), "x")
	write(t, filepath.Join(user, "stray.md"), "x")
	write(t, filepath.Join(ws, "secret.txt"), "top secret")
	if err := os.Symlink(filepath.Join(ws, "secret.txt"), filepath.Join(wsk, "release", "link.txt")); err != nil {
		t.Fatal(err)
	}
	return ws, user
}

func TestLoadByPrecedence(t *testing.T) {
	ws, user := fixture(t)
	c, err := Load([]string{filepath.Join(ws, ".rein", "skills"), user, filepath.Join(ws, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Skills {
		names = append(names, s.Name+"="+s.Description)
	}
	want := "release=Cut a release - tag, changelog, publish.|review=Review a pull request"
	if got := strings.Join(names, "|"); got != want {
		t.Fatalf("skills = %s, want %s", got, want)
	}
	problems := strings.Join(c.Problems, "\n")
	for _, w := range []string{"already defined", "no description", "no front matter", "no closing"} {
		if !strings.Contains(problems, w) {
			t.Errorf("problems lack %q:\n%s", w, problems)
		}
	}
	p := c.Prompt()
	if !strings.Contains(p, "\n- release: Cut a release - tag, changelog, publish.\n- review: Review a pull request") {
		t.Fatalf("prompt:\n%s", p)
	}
	if (&Catalog{}).Prompt() != "" {
		t.Fatal("a block without skills")
	}
}

func TestReadSkill(t *testing.T) {
	ws, user := fixture(t)
	c, err := Load([]string{filepath.Join(ws, ".rein", "skills"), user})
	if err != nil {
		t.Fatal(err)
	}
	r := Read(c)
	tests := []struct {
		args   string
		want   string
		failed bool
	}{
		{`{"name":"release"}`, "# Release\nRun make release.", false},
		{`{"name":"release"}`, "checklist.md, link.txt, logo.bin, scripts/tag.sh", false},
		{`{"name":"release","file":"checklist.md"}`, "- bump version", false},
		{`{"name":"release","file":"scripts/tag.sh"}`, "git tag", false},
		{`{"name":"review"}`, "Read the diff.", false},
		{`{"name":"nope"}`, `no skill "nope"; skills: release, review`, true},
		{`{"name":"release","file":"missing.md"}`, `has no file "missing.md"; files: SKILL.md, checklist.md`, true},
		{`{"name":"release","file":"../../secret.txt"}`, "outside the skill", true},
		{`{"name":"release","file":"/etc/passwd"}`, "outside the skill", true},
		{`{"name":"release","file":"link.txt"}`, "cannot read", true},
		{`{"name":"release","file":"scripts"}`, "is a directory", true},
		{`{"name":"release","file":"logo.bin"}`, "not a text file", true},
	}
	for _, tc := range tests {
		out, err := r.Run(context.Background(), tool.Call{Args: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if out.Failed != tc.failed || !strings.Contains(out.Text, tc.want) {
			t.Errorf("read_skill %s = %+v, want failed=%v and %q", tc.args, out, tc.failed, tc.want)
		}
		if strings.Contains(out.Text, "top secret") {
			t.Fatalf("read_skill %s read outside the skill", tc.args)
		}
	}
}

func TestGate(t *testing.T) {
	ws, user := fixture(t)
	notDir := filepath.Join(ws, "secret.txt")
	tests := []struct {
		name    string
		dirs    []string
		on      bool
		wantErr bool
	}{
		{"skills", []string{user}, true, false},
		{"no directories", []string{filepath.Join(ws, "none")}, false, false},
		{"empty directory", []string{t.TempDir()}, false, false},
		{"unreadable directory", []string{notDir, user}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.dirs)
			on, gerr := Gate(c, err)(context.Background())
			if on != tc.on || (gerr != nil) != tc.wantErr {
				t.Fatalf("gate = %v, %v; want %v, error %v", on, gerr, tc.on, tc.wantErr)
			}
		})
	}
}

func TestDirs(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	got := Dirs("/ws")
	if strings.Join(got, " ") != "/ws/.rein/skills /cfg/rein/skills" {
		t.Fatalf("Dirs = %v", got)
	}
}

func TestAgentsMD(t *testing.T) {
	ws := t.TempDir()
	if got, err := AgentsMD(os.DirFS(ws)); got != "" || err != nil {
		t.Fatalf("no AGENTS.md: %q, %v", got, err)
	}
	write(t, filepath.Join(ws, "AGENTS.md"), "Run go test before committing.\n")
	got, err := AgentsMD(os.DirFS(ws))
	if err != nil || !strings.HasSuffix(got, "\n\nRun go test before committing.") {
		t.Fatalf("AGENTS.md block = %q, %v", got, err)
	}
	write(t, filepath.Join(ws, "AGENTS.md"), strings.Repeat("é", maxAgentsMD))
	got, err = AgentsMD(os.DirFS(ws))
	if err != nil || !strings.Contains(got, "[AGENTS.md cut at") || len(got) > maxAgentsMD+200 || !strings.HasPrefix(got, "Instructions") {
		t.Fatalf("long AGENTS.md: %d bytes, %v", len(got), err)
	}
	body := strings.TrimPrefix(got, "Instructions from AGENTS.md in the workspace:\n\n")
	body, _, _ = strings.Cut(body, "\n[AGENTS.md cut")
	if !strings.HasSuffix(body, "é") {
		t.Fatal("the cut splits a character")
	}
}
