package store

import (
	"container/heap"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrDims: a vector whose length is not the one the knowledge base's
// vectors have.
var ErrDims = errors.New("store: the vector's length differs from the knowledge base's")

// SetKBEmbedding records that the knowledge base name is embedded with
// model (provider:model), creating the base if needed. A different model
// than before drops the vectors made with the old one, which cannot be
// compared with the new one's; the same model keeps them.
func (s *Store) SetKBEmbedding(ctx context.Context, name, model string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if model == "" {
		return errors.New("store: an embedding model is provider:model, not empty")
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := time.Now().UnixNano()
		if _, err := tx.ExecContext(ctx, `INSERT INTO kbs (name, created, updated) VALUES (?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, name, now, now); err != nil {
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		var old string
		err := tx.QueryRowContext(ctx, `SELECT model FROM kb_embed WHERE kb = ?`, name).Scan(&old)
		switch {
		case err == nil && old == model:
			return nil
		case err == nil:
			if _, err := tx.ExecContext(ctx, `DELETE FROM kb_vectors WHERE chunk IN
				(SELECT c.id FROM kb_chunks c JOIN kb_files f ON f.id = c.file WHERE f.kb = ?)`, name); err != nil {
				return fmt.Errorf("store: kb %s: %w", name, err)
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kb_embed (kb, model, dims) VALUES (?, ?, 0)
			ON CONFLICT (kb) DO UPDATE SET model = excluded.model, dims = 0`, name, model); err != nil {
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		return bumpKB(ctx, tx, name, now)
	})
}

// KBEmbedding returns the embedding model of the knowledge base name, ""
// for a base searched by BM25 alone.
func (s *Store) KBEmbedding(ctx context.Context, name string) (string, error) {
	var model string
	err := s.db.QueryRowContext(ctx, `SELECT model FROM kb_embed WHERE kb = ?`, name).Scan(&model)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: kb %s: %w", name, err)
	}
	return model, nil
}

// KBChunkText is a chunk to embed: its id and text.
type KBChunkText struct {
	ID   int64
	Text string
}

// KBChunksToEmbed returns up to limit chunks of the knowledge base name
// that have no vector yet, in id order: after a file changed, only its new
// chunks.
func (s *Store) KBChunksToEmbed(ctx context.Context, name string, limit int) ([]KBChunkText, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, t.text FROM kb_chunks c JOIN kb_files f ON f.id = c.file
		JOIN kb_text t ON t.rowid = c.id
		WHERE f.kb = ? AND NOT EXISTS (SELECT 1 FROM kb_vectors v WHERE v.chunk = c.id)
		ORDER BY c.id LIMIT ?`, name, limit)
	if err != nil {
		return nil, fmt.Errorf("store: kb %s: %w", name, err)
	}
	defer rows.Close()
	var out []KBChunkText
	for rows.Next() {
		var c KBChunkText
		if err := rows.Scan(&c.ID, &c.Text); err != nil {
			return nil, fmt.Errorf("store: kb %s: %w", name, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: kb %s: %w", name, err)
	}
	return out, nil
}

// PutKBVectors stores the vectors of chunks of the knowledge base name,
// vecs[i] for chunks[i], each scaled to unit length. All must have the
// length the base's first vectors had (ErrDims); a zero vector is refused.
func (s *Store) PutKBVectors(ctx context.Context, name string, chunks []int64, vecs [][]float32) error {
	if len(chunks) != len(vecs) {
		return fmt.Errorf("store: kb %s: %d chunks but %d vectors", name, len(chunks), len(vecs))
	}
	if len(vecs) == 0 {
		return nil
	}
	blobs := make([][]byte, len(vecs))
	for i, v := range vecs {
		if len(v) != len(vecs[0]) || len(v) == 0 {
			return fmt.Errorf("store: kb %s: vector %d has %d dimensions, the first %d: %w", name, i, len(v), len(vecs[0]), ErrDims)
		}
		b, err := unitBlob(v)
		if err != nil {
			return fmt.Errorf("store: kb %s: vector %d: %w", name, i, err)
		}
		blobs[i] = b
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var dims int
		if err := tx.QueryRowContext(ctx, `SELECT dims FROM kb_embed WHERE kb = ?`, name).Scan(&dims); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: kb %s has no embedding model; set one first (SetKBEmbedding)", name)
			}
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		switch {
		case dims == 0:
			if _, err := tx.ExecContext(ctx, `UPDATE kb_embed SET dims = ? WHERE kb = ?`, len(vecs[0]), name); err != nil {
				return fmt.Errorf("store: kb %s: %w", name, err)
			}
		case dims != len(vecs[0]):
			return fmt.Errorf("store: kb %s: vectors of %d dimensions, the base's have %d: %w", name, len(vecs[0]), dims, ErrDims)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO kb_vectors (chunk, vec) SELECT ?, ? WHERE EXISTS
			(SELECT 1 FROM kb_chunks c JOIN kb_files f ON f.id = c.file WHERE c.id = ? AND f.kb = ?)
			ON CONFLICT (chunk) DO UPDATE SET vec = excluded.vec`)
		if err != nil {
			return fmt.Errorf("store: kb %s: %w", name, err)
		}
		defer ins.Close()
		for i, id := range chunks {
			if _, err := ins.ExecContext(ctx, id, blobs[i], id, name); err != nil {
				return fmt.Errorf("store: kb %s: chunk %d: %w", name, id, err)
			}
		}
		return bumpKB(ctx, tx, name, time.Now().UnixNano())
	})
}

// unitBlob is v scaled to unit length, as float32 little-endian.
func unitBlob(v []float32) ([]byte, error) {
	var sum float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("not a finite vector")
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil, errors.New("a zero vector has no direction")
	}
	n := math.Sqrt(sum)
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(float64(x)/n)))
	}
	return b, nil
}

// SearchKBVectors returns up to limit passages of the knowledge base name
// nearest to vec by cosine, best first; Score is the cosine. The search is
// exact: every vector of the base is scored, from memory (kb_vecindex.go:
// read from SQLite once, again when the base changes), or from SQLite row
// by row for a base too large to keep. A base without vectors gives
// nothing; a vector of another length, ErrDims.
func (s *Store) SearchKBVectors(ctx context.Context, name string, vec []float32, limit int) ([]Passage, error) {
	stamp, err := s.kbStamp(ctx, name)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 10
	}
	q, err := unitBlob(vec)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: the query's %w", name, err)
	}
	x, err := s.vectorIndex(ctx, name, stamp)
	if err != nil {
		return nil, err
	}
	if x == nil {
		return s.scanKBVectors(ctx, name, q, limit)
	}
	if len(x.ids) == 0 {
		return nil, nil
	}
	if x.dims != len(vec) {
		return nil, fmt.Errorf("store: search %s: the query has %d dimensions, the base's vectors %d: %w", name, len(vec), x.dims, ErrDims)
	}
	qv := make([]float32, len(vec))
	for i := range qv {
		qv[i] = math.Float32frombits(binary.LittleEndian.Uint32(q[4*i:]))
	}
	return s.passagesOf(ctx, name, x.nearestOf(qv, limit))
}

// scanKBVectors is the exact search of a base read from SQLite row by row,
// for a base whose vectors are too many to keep in memory; q is the unit
// query as a blob.
func (s *Store) scanKBVectors(ctx context.Context, name string, q []byte, limit int) ([]Passage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT v.chunk, v.vec FROM kb_vectors v JOIN kb_chunks c ON c.id = v.chunk
		JOIN kb_files f ON f.id = c.file WHERE f.kb = ?`, name)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	defer rows.Close()
	qv := make([]float32, len(q)/4)
	for i := range qv {
		qv[i] = math.Float32frombits(binary.LittleEndian.Uint32(q[4*i:]))
	}
	best := &nearest{}
	for rows.Next() {
		var id int64
		// RawBytes: the vector is read in place, not copied per row.
		var blob sql.RawBytes
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("store: search %s: %w", name, err)
		}
		if len(blob) != len(q) {
			return nil, fmt.Errorf("store: search %s: the query has %d dimensions, the base's vectors %d: %w", name, len(q)/4, len(blob)/4, ErrDims)
		}
		score := dot(qv, blob)
		if best.Len() < limit {
			heap.Push(best, hit{id, score})
		} else if score > (*best)[0].score {
			(*best)[0] = hit{id, score}
			heap.Fix(best, 0)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	hits := make([]hit, best.Len())
	for i := len(hits) - 1; i >= 0; i-- {
		hits[i] = heap.Pop(best).(hit)
	}
	return s.passagesOf(ctx, name, hits)
}

// passagesOf reads the passages of hits, in their order.
func (s *Store) passagesOf(ctx context.Context, name string, hits []hit) ([]Passage, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	// One query for every hit: the ids as a JSON array.
	ids := make([]byte, 0, 12*len(hits))
	ids = append(ids, '[')
	for i, h := range hits {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, h.id, 10)
	}
	ids = append(ids, ']')
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, f.path, c.start_line, c.end_line, t.text FROM kb_chunks c
		JOIN kb_files f ON f.id = c.file JOIN kb_text t ON t.rowid = c.id
		WHERE c.id IN (SELECT value FROM json_each(?))`, string(ids))
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	defer rows.Close()
	found := make(map[int64]Passage, len(hits))
	for rows.Next() {
		var id int64
		p := Passage{KB: name}
		if err := rows.Scan(&id, &p.Path, &p.StartLine, &p.EndLine, &p.Text); err != nil {
			return nil, fmt.Errorf("store: search %s: %w", name, err)
		}
		found[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	out := make([]Passage, 0, len(hits))
	for _, h := range hits {
		p, ok := found[h.id]
		if !ok {
			continue // its file was replaced since the vectors were read
		}
		p.Score = h.score
		out = append(out, p)
	}
	return out, nil
}

// dot is the dot product of q and a float32 little-endian vector of its
// length.
func dot(q []float32, b []byte) float64 {
	var s float32
	b = b[:4*len(q)]
	for i, x := range q {
		s += x * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return float64(s)
}

type hit struct {
	id    int64
	score float64
}

// nearest is a min-heap of hits by score: its root is the worst kept.
type nearest []hit

func (h nearest) Len() int           { return len(h) }
func (h nearest) Less(i, j int) bool { return h[i].score < h[j].score }
func (h nearest) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nearest) Push(x any)        { *h = append(*h, x.(hit)) }
func (h *nearest) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
