package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/kb"
)

// knowledgeDB points the commands at a fresh store for the test.
func knowledgeDB(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rein.db")
	t.Setenv(store.EnvPath, p)
	return p
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runMain(t, context.Background(), args...)
	if code != ExitCompleted {
		t.Fatalf("rein %v: exit %d\n%s%s", args, code, stdout, stderr)
	}
	return stdout
}

func TestKBCommandsAndTheSeededTurn(t *testing.T) {
	clearKeys(t)
	db := knowledgeDB(t)
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "retry.md"), []byte("# Retries\n\nRate limited requests back off exponentially, three attempts.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "other.md"), []byte("# Other\n\nNothing to see.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "logo.png"), []byte("\x89PNG\x00"), 0o644)

	out := mustRun(t, "kb", "add", "docs", docs)
	if !strings.Contains(out, "docs: 2 files read (2 added, 0 updated, 0 unchanged)") || !strings.Contains(out, "logo.png: binary") {
		t.Fatalf("kb add:\n%s", out)
	}
	if out := mustRun(t, "kb", "list"); !strings.Contains(out, "docs  2 ") {
		t.Fatalf("kb list:\n%s", out)
	}
	if out := mustRun(t, "kb", "search", "docs", "rate", "limited"); !strings.Contains(out, "[1] ") || !strings.Contains(out, "retry.md:1-3") {
		t.Fatalf("kb search:\n%s", out)
	}
	if code, _, _ := runMain(t, context.Background(), "kb", "add", "bad name", docs); code != ExitUsage {
		t.Fatalf("bad name: exit %d", code)
	}

	// A turn with --kb: the first user message carries the seed, and a
	// sources event reports it.
	script := writeScript(t, "rounds:\n  - text: the answer\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+script, "--kb", "docs", "--workspace", t.TempDir(), "how do rate limited requests back off?")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	var thread string
	sources := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Type     string
			ThreadID string `json:"thread_id"`
			Extra    map[string]any
		}
		json.Unmarshal(sc.Bytes(), &e)
		if e.Type == string(kb.EventSources) {
			sources++
			if refs, _ := e.Extra["sources"].([]any); len(refs) == 0 {
				t.Errorf("sources event without sources: %s", sc.Text())
			}
		}
		if e.Type == "outcome" {
			thread = e.ThreadID
		}
	}
	if sources != 1 || thread == "" {
		t.Fatalf("%d sources events, thread %q:\n%s", sources, thread, stdout)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	items, err := st.Items(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	first := items[0]
	if first.Role != llm.RoleUser || !strings.HasPrefix(first.Text(), "how do rate limited requests back off?\n\n"+kb.SeedHeader) || !strings.Contains(first.Text(), "### "+filepath.ToSlash(mustRel(t, filepath.Join(docs, "retry.md")))) {
		t.Fatalf("first user message:\n%s", first.Text())
	}

	if out := mustRun(t, "kb", "rm", "docs"); !strings.Contains(out, "removed docs") {
		t.Fatalf("kb rm: %s", out)
	}
	if code, _, _ := runMain(t, context.Background(), "kb", "rm", "docs"); code != ExitFailed {
		t.Fatalf("second rm: exit %d", code)
	}
}

// mustRel is path as kb add shows it: relative to the current directory
// when inside it.
func mustRel(t *testing.T, path string) string {
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func TestMemoryAndNotesCommandsTurnTheirFlagsOn(t *testing.T) {
	knowledgeDB(t)
	flag := func(r toolsReport, name string) bool {
		for _, f := range r.Flags {
			if f.Flag == name {
				return f.On
			}
		}
		return false
	}
	r := toolsJSON(t)
	if flag(r, "has_memory") || flag(r, "has_notebooks") {
		t.Fatalf("flags on with an empty store: %+v", r.Flags)
	}
	if in, _, _ := r.decision("write_memory"); !in {
		t.Fatal("write_memory is not always on")
	}
	if in, _, _ := r.decision("cron"); !in {
		t.Fatal("cron is not always on")
	}
	// The user's scope, which a turn in any workspace (toolsJSON's own
	// temporary one) sees.
	if out := mustRun(t, "memory", "add", "--scope", "user", "Prefers", "tabs."); out != "saved as m1 (user)\n" {
		t.Fatalf("memory add: %q", out)
	}
	if out := mustRun(t, "memory", "add", "prefers tabs"); out != "already saved as m1 (user)\n" {
		t.Fatalf("memory add again: %q", out)
	}
	if out := mustRun(t, "notes", "new", "--scope", "user", "research"); !strings.Contains(out, "= research (user)") {
		t.Fatalf("notes new: %q", out)
	}
	r = toolsJSON(t)
	for _, name := range []string{"read_memory", "list_notebook", "write_note"} {
		if in, reason, _ := r.decision(name); !in {
			t.Errorf("%s out: %s", name, reason)
		}
	}
	if out := mustRun(t, "memory", "list"); out != "[m1] (user) Prefers tabs.\n" {
		t.Fatalf("memory list: %q", out)
	}
	if out := mustRun(t, "notes", "list"); !strings.Contains(out, "research  user   0") {
		t.Fatalf("notes list:\n%s", out)
	}
	if out := mustRun(t, "notes", "show", "research"); out != "no records yet\n" {
		t.Fatalf("notes show: %q", out)
	}
	if code, _, _ := runMain(t, context.Background(), "notes", "show", "nope"); code != ExitFailed {
		t.Fatalf("notes show of a missing notebook: exit %d", code)
	}
	mustRun(t, "memory", "rm", "m1")
	if code, _, _ := runMain(t, context.Background(), "memory", "rm", "m1"); code != ExitFailed {
		t.Fatalf("second rm: exit %d", code)
	}
}

func TestMemoryAndNotesListBothScopesMarked(t *testing.T) {
	knowledgeDB(t)
	a, b := t.TempDir(), t.TempDir()
	mustRun(t, "memory", "add", "-C", a, "Builds with make.")
	mustRun(t, "memory", "add", "--scope", "user", "Prefers tabs.")
	mustRun(t, "memory", "add", "-C", b, "Builds with bazel.")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-C", a}, "[m1] (workspace) Builds with make.\n[m2] (user) Prefers tabs.\n"},
		{[]string{"-C", b}, "[m2] (user) Prefers tabs.\n[m3] (workspace) Builds with bazel.\n"},
		{[]string{"-C", a, "--scope", "user"}, "[m2] (user) Prefers tabs.\n"},
		{[]string{"-C", a, "--scope", "workspace"}, "[m1] (workspace) Builds with make.\n"},
	}
	for _, tc := range tests {
		if out := mustRun(t, append([]string{"memory", "list"}, tc.args...)...); out != tc.want {
			t.Errorf("memory list %v = %q, want %q", tc.args, out, tc.want)
		}
	}
	// Another workspace's entry is not removed from here, nor a user's
	// entry under --scope workspace.
	if code, _, _ := runMain(t, context.Background(), "memory", "rm", "-C", b, "m1"); code != ExitFailed {
		t.Fatalf("rm of another workspace's entry: exit %d", code)
	}
	if code, _, _ := runMain(t, context.Background(), "memory", "rm", "-C", a, "--scope", "workspace", "m2"); code != ExitFailed {
		t.Fatalf("rm of the user's entry under --scope workspace: exit %d", code)
	}
	if code, _, _ := runMain(t, context.Background(), "memory", "list", "--scope", "project"); code != ExitUsage {
		t.Fatalf("--scope project: exit %d", code)
	}
	mustRun(t, "memory", "rm", "-C", a, "m1")

	// A notebook name is per scope; each workspace sees its own and the user's.
	mustRun(t, "notes", "new", "-C", a, "todo")
	mustRun(t, "notes", "new", "-C", b, "todo")
	mustRun(t, "notes", "new", "--scope", "user", "reading")
	if code, _, _ := runMain(t, context.Background(), "notes", "new", "-C", a, "todo"); code != ExitUsage {
		t.Fatalf("a second todo in a: exit %d", code)
	}
	out := mustRun(t, "notes", "list", "-C", a)
	if strings.Count(out, "todo") != 1 || !strings.Contains(out, "todo     workspace") || !strings.Contains(out, "reading  user") {
		t.Fatalf("notes list -C a:\n%s", out)
	}
}

func TestAStoreThatCannotOpenLeavesTheStoreToolsOut(t *testing.T) {
	// A directory is not a database: the store does not open, so the
	// store's gates fail closed and its tools are not registered.
	r := toolsJSON(t, "--db", t.TempDir(), "--kb", "docs")
	for _, name := range []string{"rag", "read_memory", "list_notebook"} {
		in, reason, _ := r.decision(name)
		if in || !strings.Contains(reason, "could not be computed") {
			t.Errorf("%s: in=%v, reason %q", name, in, reason)
		}
	}
	if in, reason, _ := r.decision("write_memory"); in || !strings.Contains(reason, "not registered") {
		t.Errorf("write_memory: in=%v, reason %q", in, reason)
	}
}

func TestAttachAndSkills(t *testing.T) {
	clearKeys(t)
	knowledgeDB(t)
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	skill := filepath.Join(ws, ".rein", "skills", "release")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: release\ndescription: Cut a release\n---\nSteps."), 0o644)
	src := filepath.Join(t.TempDir(), "brief.md")
	os.WriteFile(src, []byte("the brief"), 0o644)

	code, stdout, stderr := runMain(t, context.Background(), "tools", "--json", "--workspace", ws, "--attach", src)
	if code != ExitCompleted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r toolsReport
	json.Unmarshal([]byte(stdout), &r)
	for _, name := range []string{"read_source", "read_skill"} {
		if in, reason, _ := r.decision(name); !in {
			t.Errorf("%s out: %s", name, reason)
		}
	}
	code, _, stderr = runMain(t, context.Background(), "tools", "--workspace", ws, "--attach", filepath.Join(ws, "missing.md"))
	if code != ExitUsage || !strings.Contains(stderr, "missing.md") {
		t.Fatalf("missing attachment: exit %d, %s", code, stderr)
	}
}

func TestTheSystemPromptCarriesTheKnowledgeBlocks(t *testing.T) {
	db := knowledgeDB(t)
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Always run the tests."), 0o644)
	skill := filepath.Join(dir, ".rein", "skills", "release")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: release\ndescription: Cut a release\n---\nSteps."), 0o644)
	src := filepath.Join(dir, "brief.md")
	os.WriteFile(src, []byte("the brief\n"), 0o644)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.AddMemory(context.Background(), store.UserScope, "Prefers tabs.")
	nb, _ := st.CreateNotebook(context.Background(), store.UserScope, "research")

	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	st.AddMemory(context.Background(), ws.Dir(), "Builds with make.")
	st.AddMemory(context.Background(), t.TempDir(), "Another workspace's.")
	f := &toolFlags{capability: "none", attach: []string{src}, st: st}
	set, _, _, err := composeTools(context.Background(), ws, f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p := f.loaded.Prompt(context.Background(), set, io.Discard)
	for _, want := range []string{
		"## instructions\nInstructions from AGENTS.md in the workspace:\n\nAlways run the tests.",
		"## memory\n", "- [m1] (user) Prefers tabs.", "- [m2] (workspace) Builds with make.",
		"## skills\n", "- release: Cut a release",
		"## sources\n", "- s1 = " + filepath.ToSlash(src) + " (1 lines)",
		"## notebooks\n", "- " + nb.ID + " = research (user, 0 records)",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "Another workspace") {
		t.Errorf("prompt shows another workspace's memory:\n%s", p)
	}
	// Without the tools, their blocks go too.
	st.DeleteMemory(context.Background(), store.Visible(store.UserScope), "m1")
	st.DeleteMemory(context.Background(), store.Visible(ws.Dir()), "m2")
	f = &toolFlags{capability: "none", st: st}
	set, _, _, _ = composeTools(context.Background(), ws, f, io.Discard)
	p = f.loaded.Prompt(context.Background(), set, io.Discard)
	if strings.Contains(p, "## memory") || strings.Contains(p, "## sources") {
		t.Fatalf("blocks of tools the turn lacks:\n%s", p)
	}
}
