package store

import (
	"context"
	"errors"
	"math"
	"testing"
)

// chunksToEmbed returns the ids of the base's chunks without vectors.
func chunksToEmbed(t *testing.T, s *Store, kb string) []int64 {
	t.Helper()
	cs, err := s.KBChunksToEmbed(context.Background(), kb, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestKBVectorsAreSearchedByCosineAndFollowTheirChunks(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if err := s.SetKBEmbedding(ctx, "docs", "mock:e1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutKBDocs(ctx, "docs", []KBDoc{doc("a.md", "h1", "east"), doc("b.md", "h2", "north"), doc("c.md", "h3", "north-east")}); err != nil {
		t.Fatal(err)
	}
	ids := chunksToEmbed(t, s, "docs")
	if len(ids) != 3 {
		t.Fatalf("%d chunks to embed, want 3", len(ids))
	}
	// Lengths differ: the store scales each to unit length.
	if err := s.PutKBVectors(ctx, "docs", ids, [][]float32{{3, 0}, {0, 0.5}, {1, 1}}); err != nil {
		t.Fatal(err)
	}
	if left := chunksToEmbed(t, s, "docs"); len(left) != 0 {
		t.Errorf("%d chunks still to embed", len(left))
	}
	ps, err := s.SearchKBVectors(ctx, "docs", []float32{1, 0.1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Path != "a.md" || ps[1].Path != "c.md" || math.Abs(ps[0].Score-0.995) > 0.001 {
		t.Errorf("nearest to east: %+v", ps)
	}
	if _, err := s.SearchKBVectors(ctx, "docs", []float32{1, 0, 0}, 2); !errors.Is(err, ErrDims) {
		t.Errorf("a query of 3 dimensions: %v, want ErrDims", err)
	}
	if err := s.PutKBVectors(ctx, "docs", ids[:1], [][]float32{{1, 2, 3}}); !errors.Is(err, ErrDims) {
		t.Errorf("a vector of 3 dimensions: %v, want ErrDims", err)
	}
	if err := s.PutKBVectors(ctx, "docs", ids[:1], [][]float32{{0, 0}}); err == nil {
		t.Error("a zero vector: no error")
	}
	// A changed file's chunks go, with their vectors; only the new chunk
	// needs one.
	if _, err := s.PutKBDocs(ctx, "docs", []KBDoc{doc("b.md", "h2b", "due north")}); err != nil {
		t.Fatal(err)
	}
	if left := chunksToEmbed(t, s, "docs"); len(left) != 1 {
		t.Errorf("after a change %d chunks to embed, want 1", len(left))
	}
	var vecs int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM kb_vectors`).Scan(&vecs); err != nil || vecs != 2 {
		t.Errorf("%d vectors left (err %v), want 2: the changed file's went with its chunk", vecs, err)
	}
	// Another model: the old vectors cannot be compared with its own.
	if err := s.SetKBEmbedding(ctx, "docs", "mock:e2"); err != nil {
		t.Fatal(err)
	}
	if left := chunksToEmbed(t, s, "docs"); len(left) != 3 {
		t.Errorf("after a model change %d chunks to embed, want 3", len(left))
	}
	if m, err := s.KBEmbedding(ctx, "docs"); err != nil || m != "mock:e2" {
		t.Errorf("model %q %v", m, err)
	}
	if err := s.PutKBVectors(ctx, "docs", chunksToEmbed(t, s, "docs"), [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}); err != nil {
		t.Errorf("the new model's vectors may have another length: %v", err)
	}
	if err := s.DeleteKB(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM kb_vectors) + (SELECT count(*) FROM kb_embed)`).Scan(&vecs); err != nil || vecs != 0 {
		t.Errorf("%d vector rows left after DeleteKB (err %v)", vecs, err)
	}
	if m, err := s.KBEmbedding(ctx, "nonesuch"); err != nil || m != "" {
		t.Errorf("a base without embeddings: %q %v", m, err)
	}
}

func TestPutKBVectorsNeedsAModelAndTheBasesOwnChunks(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if _, err := s.PutKBDocs(ctx, "a", []KBDoc{doc("a.md", "h", "x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutKBDocs(ctx, "b", []KBDoc{doc("b.md", "h", "y")}); err != nil {
		t.Fatal(err)
	}
	ids := chunksToEmbed(t, s, "a")
	if err := s.PutKBVectors(ctx, "a", ids, [][]float32{{1}}); err == nil {
		t.Error("vectors for a base without a model: no error")
	}
	if err := s.SetKBEmbedding(ctx, "b", "mock:e"); err != nil {
		t.Fatal(err)
	}
	// a's chunk is not b's: nothing is written for it.
	if err := s.PutKBVectors(ctx, "b", ids, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	if ps, err := s.SearchKBVectors(ctx, "b", []float32{1}, 5); err != nil || len(ps) != 0 {
		t.Errorf("b found %+v (%v) through another base's chunk", ps, err)
	}
}
