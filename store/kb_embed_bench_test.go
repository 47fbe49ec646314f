package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkKBVectorSearch20k: the exact cosine search of a query over
// 20,000 chunks of 256 dimensions (the size of the 10,000-file corpus of
// bench/RESULTS-knowledge.md; OpenAI's small model has 1536): warm, the
// vectors kept in memory; cold, read from SQLite first.
func BenchmarkKBVectorSearch20k(b *testing.B) {
	for _, dims := range []int{256, 1536} {
		b.Run(fmt.Sprintf("dims=%d", dims), func(b *testing.B) {
			s := openTemp(b)
			ctx := context.Background()
			if err := s.SetKBEmbedding(ctx, "big", "mock:e"); err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			vec := func() []float32 {
				v := make([]float32, dims)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				return v
			}
			const files, batch = 20000, 1000
			for start := 0; start < files; start += batch {
				docs := make([]KBDoc, batch)
				for i := range docs {
					docs[i] = doc(fmt.Sprintf("f%05d.md", start+i), "h", fmt.Sprintf("text %d", start+i))
				}
				if _, err := s.PutKBDocs(ctx, "big", docs); err != nil {
					b.Fatal(err)
				}
				cs, err := s.KBChunksToEmbed(ctx, "big", batch)
				if err != nil {
					b.Fatal(err)
				}
				ids := make([]int64, len(cs))
				vecs := make([][]float32, len(cs))
				for i, c := range cs {
					ids[i], vecs[i] = c.ID, vec()
				}
				if err := s.PutKBVectors(ctx, "big", ids, vecs); err != nil {
					b.Fatal(err)
				}
			}
			q := vec()
			search := func(b *testing.B) {
				if ps, err := s.SearchKBVectors(ctx, "big", q, 24); err != nil || len(ps) != 24 {
					b.Fatal(err, len(ps))
				}
			}
			// warm: the vectors are in memory (every search after the
			// first, until the base changes).
			b.Run("warm", func(b *testing.B) {
				search(b)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					search(b)
				}
			})
			// cold: the first search after the base changed reads every
			// vector from SQLite again.
			b.Run("cold", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.vecs.mu.Lock()
					s.vecs.bases, s.vecs.floats = nil, 0
					s.vecs.mu.Unlock()
					search(b)
				}
			})
		})
	}
}
