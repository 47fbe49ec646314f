package kb

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeedOfAParaphraseUsesTheEmbeddings: a base with embeddings seeds a
// turn by BM25 fused with the message's nearest passages, so paraphrased
// questions of the labelled set (the mock embeddings server) seed their
// answering passage more often than BM25 alone does, which seeds from the
// message's rarest words only; the seed says it was a semantic search too.
// Before, the seed was BM25 alone whatever the base had.
func TestSeedOfAParaphraseUsesTheEmbeddings(t *testing.T) {
	srv, embedders := mockEmbedder(t)
	st := openStore(t)
	e, _ := embedders(embedModel)
	docs, err := filepath.Abs("testdata/recall/docs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Add(context.Background(), st, "ferry", []string{docs}, AddOptions{RelativeTo: docs, Embed: e, EmbedModel: embedModel}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/recall/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []labelled
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	// seeded reports whether the seed's first passages (the few a seed's
	// share holds) include the answer.
	seeded := func(s Seeded, answer string) bool {
		for _, p := range s.Sources[:min(3, len(s.Sources))] {
			if p.Path == answer {
				return true
			}
		}
		return false
	}
	var bm25, hybrid, n int
	var onlyHybrid string
	for _, q := range qs {
		if q.Kind != "paraphrase" {
			continue
		}
		n++
		lex := Seed(context.Background(), st, []string{"ferry"}, q.Query)
		hy := SeedWith(context.Background(), st, []string{"ferry"}, q.Query, embedders)
		if len(hy.Failed) > 0 {
			t.Fatalf("%q: %v", q.Query, hy.Failed)
		}
		if seeded(lex, q.Answer) {
			bm25++
		}
		if seeded(hy, q.Answer) {
			hybrid++
			if !seeded(lex, q.Answer) && onlyHybrid == "" {
				onlyHybrid = q.Query
				if !strings.HasPrefix(hy.Text, SeedHeaderHybrid) {
					t.Errorf("the hybrid seed opens %q, want the hybrid header", hy.Text[:min(80, len(hy.Text))])
				}
			}
		}
	}
	t.Logf("paraphrased questions seeding their answer in the first 3 passages: BM25 %d/%d, hybrid %d/%d (e.g. %q)", bm25, n, hybrid, n, onlyHybrid)
	if hybrid <= bm25 || onlyHybrid == "" {
		t.Errorf("hybrid seeded %d of %d paraphrases, BM25 %d: the embeddings should seed what the words miss", hybrid, n, bm25)
	}
	if reqs, _ := srv.Counts(); reqs == 0 {
		t.Error("the mock embeddings server was never asked")
	}
}

// TestSeedFallsBackToBM25WhenEmbeddingsFail: a failing embeddings
// endpoint costs the seed its vectors, not the seed: the BM25 passages
// stay, and Failed says why.
func TestSeedFallsBackToBM25WhenEmbeddingsFail(t *testing.T) {
	srv, embedders := mockEmbedder(t)
	e, _ := embedders(embedModel)
	st := openStore(t)
	dir := writeTree(t, map[string]string{"a.md": "alpha text about clocks"})
	if _, err := Add(context.Background(), st, "kb", []string{dir}, AddOptions{RelativeTo: dir, Embed: e, EmbedModel: embedModel}); err != nil {
		t.Fatal(err)
	}
	srv.FailWith(429)
	s := SeedWith(context.Background(), st, []string{"kb"}, "what about clocks", embedders)
	if len(s.Sources) != 1 || len(s.Failed) != 1 || !strings.Contains(s.Failed[0], "BM25 only") || !strings.HasPrefix(s.Text, SeedHeader) {
		t.Errorf("seed %+v; want the BM25 passage and the failure said", s)
	}
}
