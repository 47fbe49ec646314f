package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// TestKnowledgeWithoutAStore: with no store the store's tools are left
// out and their gates fail closed, saying why; attached files and the
// workspace's AGENTS.md still reach the turn; a file that cannot be read
// is an error, and no seed is made without rag.
func TestKnowledgeWithoutAStore(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Run the tests.\n"), 0o644)
	src := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(src, []byte("one line\n"), 0o644)
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := LoadKnowledge(t.Context(), ws, KnowledgeConfig{Attach: []string{filepath.Join(dir, "missing.txt")}}); err == nil {
		t.Error("an attached file that cannot be read: no error")
	}
	k, err := LoadKnowledge(t.Context(), ws, KnowledgeConfig{KBs: []string{"docs"}, Attach: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range k.Tools() {
		names = append(names, tl.Spec().Name)
	}
	got := " " + strings.Join(names, " ") + " "
	for _, storeTool := range []string{"rag", "kb_files", "read_memory", "write_memory", "list_notebook", "write_note", "cron"} {
		if strings.Contains(got, " "+storeTool+" ") {
			t.Errorf("tools without a store hold %s: %q", storeTool, got)
		}
	}
	if !strings.Contains(got, " read_source ") {
		t.Errorf("tools lack read_source: %q", got)
	}
	gates := k.Gates()
	for _, f := range []tool.Flag{tool.HasKB, tool.HasMemory, tool.HasNotebooks} {
		on, err := gates[f](context.Background())
		if on || !errors.Is(err, errNoStore) {
			t.Errorf("gate %s: %v, %v; want closed with errNoStore", f, on, err)
		}
	}
	set := tool.NewSet(k.Tools()...)
	p := k.Prompt(t.Context(), set, io.Discard)
	for _, want := range []string{"## instructions", "Run the tests.", "## sources"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if got := k.Seed(t.Context(), set, "hello", "thread_1", "turn_1", nil); got != "hello" {
		t.Errorf("seed without rag: %q", got)
	}
	if got := JoinPrompt(" a ", "", "b"); got != "a\n\nb" {
		t.Errorf("JoinPrompt: %q", got)
	}
}

// TestSecretsOfTheConfig: the values of the providers' key variables and
// the secret-looking values of the config file's headers are secrets; the
// redactor hides them.
func TestSecretsOfTheConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop1234")
	cfg, err := config.Parse("[mcp.servers.x]\ncommand = \"x\"\nheaders = { Authorization = \"Bearer tok_abcdefghijklmnopqrstuv\" }\n")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSecrets(cfg)
	got := strings.Join(s.Values(os.Getenv), "\n")
	for _, want := range []string{"sk-proj-abcdefghijklmnop1234", "tok_abcdefghijklmnopqrstuv"} {
		if !strings.Contains(got, want) {
			t.Errorf("secrets lack %s: %q", want, got)
		}
	}
	out := s.Redactor(t.TempDir())("key sk-proj-abcdefghijklmnop1234 and Bearer tok_abcdefghijklmnopqrstuv")
	if strings.Contains(out, "abcdefghijklmnop") {
		t.Errorf("not redacted: %q", out)
	}
}
