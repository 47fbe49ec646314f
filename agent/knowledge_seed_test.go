package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/kb"
)

// TestSeedOfAnEmbeddedBaseFindsAParaphrase: the first-round seed of a turn
// attaching a base embedded with a model searches it by BM25 and by the
// message's vector (the mock embeddings server), so a question with no word
// of the answering passage seeds it. Before, the seed was BM25 alone and
// seeded nothing here: no word of the question is in the base.
func TestSeedOfAnEmbeddedBaseFindsAParaphrase(t *testing.T) {
	srv := testkit.NewEmbedServer(64, map[string]string{"throw": "trash", "away": "trash", "bin": "trash", "trash": "trash", "deleted": "trash"})
	t.Cleanup(srv.Close)
	e, err := openai.NewEmbedder(openai.EmbedderOptions{BaseURL: srv.BaseURL(), APIKey: "test", Model: "embed-1", Name: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	embedders := func(string) (kb.Embedder, error) { return e, nil }
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "deleting.md"), []byte("# Deleting\n\nA deleted file goes to the trash for 30 days.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "sync.md"), []byte("# Syncing\n\nThe daemon syncs files in the background every two seconds.\n"), 0o644)
	if _, err := kb.Add(context.Background(), st, "docs", []string{docs}, kb.AddOptions{RelativeTo: docs, Embed: e, EmbedModel: "mock:embed-1"}); err != nil {
		t.Fatal(err)
	}
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	k, err := LoadKnowledge(t.Context(), ws, KnowledgeConfig{Store: st, KBs: []string{"docs"}, Embedders: embedders})
	if err != nil {
		t.Fatal(err)
	}
	set := tool.NewSet(k.Tools()...)
	got := k.Seed(t.Context(), set, "where does stuff go once I throw it away", "thread_1", "turn_1", nil)
	if !strings.Contains(got, kb.SeedHeaderHybrid) || !strings.Contains(got, "deleting.md") {
		t.Errorf("the seed of a paraphrase lacks deleting.md:\n%s", got)
	}
}
