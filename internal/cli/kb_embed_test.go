package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
)

// TestKBAddEmbedAndHybridSearch: rein kb add --embed embeds through the
// provider's /v1/embeddings (a mock speaking OpenAI's shapes, found as the
// openai provider is: OPENAI_BASE_URL, OPENAI_API_KEY), kb search and a
// turn's rag then find a passage by a paraphrase; --exclude and
// .gitignore leave files out; a base embedded once embeds what is added
// to it later without --embed.
func TestKBAddEmbedAndHybridSearch(t *testing.T) {
	clearKeys(t)
	knowledgeDB(t)
	srv := testkit.NewEmbedServer(64, map[string]string{"throw": "trash", "away": "trash", "bin": "trash", "trash": "trash", "deleted": "trash"})
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-test")
	docs := t.TempDir()
	for name, text := range map[string]string{
		"deleting.md": "# Deleting\n\nA deleted file goes to the trash for 30 days.\n",
		"sync.md":     "# Syncing\n\nThe daemon syncs files in the background every two seconds.\n",
		"build.log":   "excluded\n",
		".gitignore":  "private/\n",
	} {
		os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644)
	}
	os.MkdirAll(filepath.Join(docs, "private"), 0o755)
	os.WriteFile(filepath.Join(docs, "private", "notes.md"), []byte("ignored by .gitignore\n"), 0o644)

	out := mustRun(t, "kb", "add", "docs", docs, "--embed", "openai:embed-1", "--exclude", "*.log")
	if !strings.Contains(out, "docs: 2 files read") || !strings.Contains(out, "2 files and directories ignored") || !strings.Contains(out, "2 chunks embedded with openai:embed-1") {
		t.Fatalf("kb add:\n%s", out)
	}
	// No word of the query is in deleting.md; the embeddings relate them.
	if out := mustRun(t, "kb", "search", "docs", "throw", "away", "--limit", "1"); !strings.Contains(out, "deleting.md") {
		t.Fatalf("kb search by paraphrase:\n%s", out)
	}

	// Added to later without --embed: the base keeps its model.
	os.WriteFile(filepath.Join(docs, "bin.md"), []byte("# Bin\n\nEmptied monthly.\n"), 0o644)
	if out := mustRun(t, "kb", "add", "docs", docs, "--exclude", "*.log"); !strings.Contains(out, "(1 added, 0 updated, 2 unchanged)") || !strings.Contains(out, "1 chunks embedded with openai:embed-1") {
		t.Fatalf("kb add again:\n%s", out)
	}

	// kb list names each base's embedding model, or says BM25 only.
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "a.md"), []byte("# A\n\nplain words\n"), 0o644)
	mustRun(t, "kb", "add", "plain", plain)
	list := mustRun(t, "kb", "list")
	if !regexp.MustCompile(`(?m)^docs .*openai:embed-1$`).MatchString(list) || !regexp.MustCompile(`(?m)^plain .*bm25 only$`).MatchString(list) {
		t.Errorf("kb list does not name the embedding models:\n%s", list)
	}
	if out := mustRun(t, "kb", "list", "--json"); !strings.Contains(out, `"embedding":"openai:embed-1"`) || !strings.Contains(out, `"embedding":""`) {
		t.Errorf("kb list --json: %s", out)
	}

	// A turn's rag searches the same way.
	script := writeScript(t, `rounds:
  - calls:
      - {id: r1, name: rag, args: {kb_name: docs, query: throw away}}
  - text: found it
    expect:
      - result: {call: r1, contains: deleting.md}
`)
	if code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--kb", "docs", "--no-tool", "task", "where does it go"); code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}

	// The endpoint down: search says so and falls back to BM25.
	srv.FailWith(500)
	code, stdout, stderr := runMain(t, context.Background(), "kb", "search", "docs", "trash")
	if code != ExitCompleted || !strings.Contains(stderr, "BM25 only") || !strings.Contains(stdout, "deleting.md") {
		t.Errorf("search with the endpoint down: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runMain(t, context.Background(), "kb", "add", "other", docs, "--embed", "anthropic:x"); code != ExitUsage || !strings.Contains(stderr, "no embeddings endpoint") {
		t.Errorf("--embed anthropic: exit %d %s", code, stderr)
	}
}
