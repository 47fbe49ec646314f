package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// embedBase makes the base name of n one-chunk files with random vectors
// of dims, and returns the chunk ids in file order.
func embedBase(t testing.TB, s *Store, name string, n, dims int, r *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	if err := s.SetKBEmbedding(ctx, name, "mock:e"); err != nil {
		t.Fatal(err)
	}
	docs := make([]KBDoc, n)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf("f%04d.md", i), fmt.Sprintf("h%d", i), fmt.Sprintf("text %d", i))
	}
	if _, err := s.PutKBDocs(ctx, name, docs); err != nil {
		t.Fatal(err)
	}
	cs, err := s.KBChunksToEmbed(ctx, name, n)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(cs))
	vecs := make([][]float32, len(cs))
	for i, c := range cs {
		ids[i], vecs[i] = c.ID, randVec(r, dims)
	}
	if err := s.PutKBVectors(ctx, name, ids, vecs); err != nil {
		t.Fatal(err)
	}
}

func randVec(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestVectorSearchFromMemoryMatchesTheScan: the search over the vectors
// kept in memory finds the same passages in the same order, with the same
// scores, as the exact scan of SQLite it replaces.
func TestVectorSearchFromMemoryMatchesTheScan(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	embedBase(t, s, "big", 600, 37, r)
	for range 20 {
		q := randVec(r, 37)
		got, err := s.SearchKBVectors(ctx, "big", q, 12)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := unitBlob(q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.scanKBVectors(ctx, "big", blob, 12)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d passages from memory, %d from the scan", len(got), len(want))
		}
		for i := range got {
			if got[i].Path != want[i].Path || abs(got[i].Score-want[i].Score) > 1e-5 {
				t.Fatalf("passage %d: %s %.6f from memory, %s %.6f from the scan", i, got[i].Path, got[i].Score, want[i].Path, want[i].Score)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestVectorSearchSeesEveryChange: the vectors kept in memory are read
// again when the base changes — new vectors, a file replaced, another
// embedding model — also when another handle on the database (another
// process) made the change.
func TestVectorSearchSeesEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	other, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	ctx := context.Background()
	if err := s.SetKBEmbedding(ctx, "docs", "mock:e1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutKBDocs(ctx, "docs", []KBDoc{doc("a.md", "h1", "east")}); err != nil {
		t.Fatal(err)
	}
	put := func(st *Store, vec []float32) {
		t.Helper()
		if err := st.PutKBVectors(ctx, "docs", chunksToEmbed(t, st, "docs"), [][]float32{vec}); err != nil {
			t.Fatal(err)
		}
	}
	nearest := func(q []float32) string {
		t.Helper()
		ps, err := s.SearchKBVectors(ctx, "docs", q, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			return ""
		}
		return ps[0].Path
	}
	put(s, []float32{1, 0})
	if got := nearest([]float32{0, 1}); got != "a.md" {
		t.Fatalf("nearest %q, want a.md, the only one", got)
	}
	// Another process adds a file and its vector.
	if _, err := other.PutKBDocs(ctx, "docs", []KBDoc{doc("b.md", "h2", "north")}); err != nil {
		t.Fatal(err)
	}
	put(other, []float32{0, 1})
	if got := nearest([]float32{0, 1}); got != "b.md" {
		t.Errorf("after another handle added b.md: nearest %q, want b.md", got)
	}
	// This process replaces b.md: its old vector goes with its chunk.
	if _, err := s.PutKBDocs(ctx, "docs", []KBDoc{doc("b.md", "h3", "north, revised")}); err != nil {
		t.Fatal(err)
	}
	if got := nearest([]float32{0, 1}); got != "a.md" {
		t.Errorf("after b.md changed and lost its vector: nearest %q, want a.md", got)
	}
	put(s, []float32{-1, 1})
	if got := nearest([]float32{-1, 0.9}); got != "b.md" {
		t.Errorf("after b.md's new vector: nearest %q, want b.md", got)
	}
	// Another model: the vectors of the old one are dropped.
	if err := other.SetKBEmbedding(ctx, "docs", "mock:e2"); err != nil {
		t.Fatal(err)
	}
	if got := nearest([]float32{0, 1}); got != "" {
		t.Errorf("after the model changed: nearest %q, want none", got)
	}
}

// TestTopKKeepsTheBest: the bounded heap returns the k best, best first,
// whatever the order they come in.
func TestTopKKeepsTheBest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{0, 1, 3, 10, 50} {
		var top topK
		top.init(k)
		scores := r.Perm(40)
		for id, sc := range scores {
			top.offer(int64(id), float64(sc))
		}
		got := top.sorted()
		want := min(k, 40)
		if len(got) != want {
			t.Fatalf("k=%d: %d hits", k, len(got))
		}
		for i, h := range got {
			if h.score != float64(39-i) {
				t.Fatalf("k=%d: hit %d scores %v, want %d", k, i, h.score, 39-i)
			}
		}
	}
}

// TestSearchesArrivingTogetherLoadTheVectorsOnce: eight searches of a base
// whose vectors are not in memory each read and decoded the whole base
// (each up to the cache's bound of memory) before the first was kept.
func TestSearchesArrivingTogetherLoadTheVectorsOnce(t *testing.T) {
	s := openTemp(t)
	r := rand.New(rand.NewPCG(5, 6))
	embedBase(t, s, "kb", 2000, 64, r)
	q := randVec(r, 64)
	start := make(chan struct{})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			<-start
			_, err := s.SearchKBVectors(context.Background(), "kb", q, 5)
			errs <- err
		}()
	}
	close(start)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s.vecs.mu.Lock()
	loads := s.vecs.loads
	s.vecs.mu.Unlock()
	if loads != 1 {
		t.Errorf("the base's vectors were loaded %d times, want once", loads)
	}
}
