package kb

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reinhq/rein/store"
)

// Embedder turns texts into vectors: an embeddings endpoint
// (*openai.Embedder, found by provider.Embedder).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Embedders returns the embedder of a base's model (provider:model).
type Embedders func(model string) (Embedder, error)

// VectorStore keeps a base's vectors; *store.Store is one.
type VectorStore interface {
	SetKBEmbedding(ctx context.Context, name, model string) error
	KBEmbedding(ctx context.Context, name string) (string, error)
	KBChunksToEmbed(ctx context.Context, name string, limit int) ([]store.KBChunkText, error)
	PutKBVectors(ctx context.Context, name string, chunks []int64, vecs [][]float32) error
	SearchKBVectors(ctx context.Context, name string, vec []float32, limit int) ([]store.Passage, error)
}

// embedBatch is how many chunks go in one embeddings request.
const embedBatch = 64

// errNoVectors: the store given to Add keeps no vectors.
var errNoVectors = errors.New("kb: this store keeps no vectors, so the base cannot be embedded")

func setEmbedding(ctx context.Context, st Putter, name, model string) error {
	vs, ok := st.(VectorStore)
	if !ok {
		return errNoVectors
	}
	if err := vs.SetKBEmbedding(ctx, name, model); err != nil {
		return fmt.Errorf("kb: %s: %w", name, err)
	}
	return nil
}

// Embed gives a vector to every chunk of the base name that has none yet
// (after a file changed, only its new chunks), embeddings requests of
// embedBatch chunks at a time, and returns how many it embedded. The base
// must have an embedding model (AddOptions.EmbedModel).
func Embed(ctx context.Context, st Putter, name string, e Embedder) (int, error) {
	vs, ok := st.(VectorStore)
	if !ok {
		return 0, errNoVectors
	}
	done := 0
	for {
		cs, err := vs.KBChunksToEmbed(ctx, name, embedBatch)
		if err != nil || len(cs) == 0 {
			return done, err
		}
		texts := make([]string, len(cs))
		ids := make([]int64, len(cs))
		for i, c := range cs {
			texts[i], ids[i] = c.Text, c.ID
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return done, err
		}
		if len(vecs) != len(texts) {
			return done, fmt.Errorf("the embedder gave %d vectors for %d chunks", len(vecs), len(texts))
		}
		if err := vs.PutKBVectors(ctx, name, ids, vecs); err != nil {
			return done, err
		}
		done += len(cs)
	}
}

// rrfK is the constant of reciprocal rank fusion: a passage's fused score
// is the sum over the rankings of 1/(rrfK + rank). 60 is the value of the
// method's paper, and the usual one.
const rrfK = 60

// Search is the search of rag and `rein kb search`: BM25 for a base without
// embeddings (or without embedders); for a base with them, BM25 and the
// cosine nearest passages to the query's vector, fused by reciprocal rank.
// Hybrid says which it was; Note says why a hybrid search fell back to
// BM25 (the embeddings endpoint failed), "" when it did not.
func Search(ctx context.Context, idx Index, name, query string, limit int, embedders Embedders) (ps []store.Passage, hybrid bool, note string, err error) {
	if limit <= 0 {
		limit = 10
	}
	vs, _ := idx.(VectorStore)
	var model string
	if vs != nil && embedders != nil {
		if model, err = vs.KBEmbedding(ctx, name); err != nil {
			return nil, false, "", err
		}
	}
	if model == "" {
		ps, err = idx.SearchKB(ctx, name, query, limit)
		return ps, false, "", err
	}
	// Each ranking is read deeper than the answer: a passage second in
	// both beats one first in only one.
	depth := max(4*limit, 20)
	lexical, err := idx.SearchKB(ctx, name, query, depth)
	if err != nil && !errors.Is(err, store.ErrEmptyQuery) {
		return nil, false, "", err
	}
	semantic, verr := vectorSearch(ctx, vs, embedders, model, name, query, depth)
	if verr != nil {
		if errors.Is(err, store.ErrEmptyQuery) {
			return nil, false, "", err
		}
		return lexical[:min(limit, len(lexical))], false, fmt.Sprintf("BM25 only: the embeddings of %s failed (%v)", model, verr), nil
	}
	return fuse(limit, lexical, semantic), true, "", nil
}

func vectorSearch(ctx context.Context, vs VectorStore, embedders Embedders, model, name, query string, depth int) ([]store.Passage, error) {
	e, err := embedders(model)
	if err != nil {
		return nil, err
	}
	vecs, err := e.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("the embedder gave %d vectors for one query", len(vecs))
	}
	return vs.SearchKBVectors(ctx, name, vecs[0], depth)
}

// fuse merges rankings by reciprocal rank fusion and keeps the best limit;
// Score becomes the fused score. Ties keep the earlier ranking's order.
func fuse(limit int, rankings ...[]store.Passage) []store.Passage {
	type entry struct {
		p     store.Passage
		score float64
		first int // position of first appearance, for stable ties
	}
	byRef := map[string]*entry{}
	var order []*entry
	for _, ranking := range rankings {
		for rank, p := range ranking {
			key := fmt.Sprintf("%s\x00%d\x00%d", p.Path, p.StartLine, p.EndLine)
			e, ok := byRef[key]
			if !ok {
				e = &entry{p: p, first: len(order)}
				byRef[key] = e
				order = append(order, e)
			}
			e.score += 1 / float64(rrfK+rank+1)
		}
	}
	slices.SortStableFunc(order, func(a, b *entry) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.first - b.first
	})
	out := make([]store.Passage, 0, min(limit, len(order)))
	for _, e := range order[:min(limit, len(order))] {
		p := e.p
		p.Score = e.score
		out = append(out, p)
	}
	return out
}
