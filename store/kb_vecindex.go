package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// The vectors of a knowledge base, kept decoded in memory between searches
// (SearchKBVectors): reading and decoding every vector from SQLite was
// nearly all of an exact search's cost. An index is valid for the base's
// stamp (kbs.updated), which every write of its files or vectors moves
// (PutKBDocs, SetKBEmbedding, PutKBVectors), in this process or another:
// each search reads the stamp, one primary-key lookup, and loads the
// vectors again when it moved.

// maxCachedFloats bounds the vectors kept in memory, over every base of a
// store: 64 Mi float32s, 256 MiB (20,000 chunks of 1536 dimensions take
// 118 MiB). A base over the bound alone is searched from SQLite, row by
// row, as before; loading one evicts the others when they would not fit.
const maxCachedFloats = 64 << 20

// vecIndex is a base's vectors at one stamp: row i, unit length, is the
// vector of chunk ids[i]. It is never changed once built, so searches share
// it without a lock.
type vecIndex struct {
	stamp int64
	dims  int
	ids   []int64
	vecs  []float32
}

// vecCache holds the indexes of a store's bases. One index is loaded at a
// time: searches arriving together on a base that changed (the turns of a
// fleet seeding from it) would each read and hold the whole base, up to the
// bound each, before any was kept; serialised, the later ones find the
// first one's index.
type vecCache struct {
	mu     sync.Mutex
	bases  map[string]*vecIndex
	floats int
	// loading holds the one load in progress (a semaphore made on first
	// use); loads counts the loads from SQLite, for tests.
	loading chan struct{}
	loads   int
}

// lock waits for the load in progress, if any, and returns the function
// that ends this one; an error when ctx ends first.
func (c *vecCache) lock(ctx context.Context) (unlock func(), err error) {
	c.mu.Lock()
	if c.loading == nil {
		c.loading = make(chan struct{}, 1)
	}
	sem := c.loading
	c.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("store: vectors: %w", ctx.Err())
	}
}

// get returns the base's index at stamp, or nil.
func (c *vecCache) get(name string, stamp int64) *vecIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.bases[name]; x != nil && x.stamp == stamp {
		return x
	}
	return nil
}

// put keeps x as the base's index, evicting other bases when the bound
// needs it; an index over the bound alone is not kept.
func (c *vecCache) put(name string, x *vecIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bases == nil {
		c.bases = map[string]*vecIndex{}
	}
	if old := c.bases[name]; old != nil {
		c.floats -= len(old.vecs)
		delete(c.bases, name)
	}
	if len(x.vecs) > maxCachedFloats {
		return
	}
	for other, o := range c.bases {
		if c.floats+len(x.vecs) <= maxCachedFloats {
			break
		}
		c.floats -= len(o.vecs)
		delete(c.bases, other)
	}
	c.bases[name] = x
	c.floats += len(x.vecs)
}

// kbStamp returns the base's stamp, or an error wrapping ErrNotFound.
func (s *Store) kbStamp(ctx context.Context, name string) (int64, error) {
	var stamp int64
	err := s.db.QueryRowContext(ctx, `SELECT updated FROM kbs WHERE name = ?`, name).Scan(&stamp)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("knowledge base %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: knowledge base %s: %w", name, err)
	}
	return stamp, nil
}

// bumpKB moves the base's stamp: its vectors changed. The stamp only
// grows, however the clock goes.
func bumpKB(ctx context.Context, tx *sql.Tx, name string, now int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE kbs SET updated = max(updated + 1, ?) WHERE name = ?`, now, name); err != nil {
		return fmt.Errorf("store: kb %s: %w", name, err)
	}
	return nil
}

// vectorIndex returns the base's vectors at stamp: cached, or read from
// SQLite and cached. It returns nil, nil when the base's vectors are over
// the cache's bound: the caller scans them from SQLite.
func (s *Store) vectorIndex(ctx context.Context, name string, stamp int64) (*vecIndex, error) {
	if x := s.vecs.get(name, stamp); x != nil {
		return x, nil
	}
	unlock, err := s.vecs.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Loaded while this search waited.
	if x := s.vecs.get(name, stamp); x != nil {
		return x, nil
	}
	s.vecs.mu.Lock()
	s.vecs.loads++
	s.vecs.mu.Unlock()
	var dims, n int
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce((SELECT dims FROM kb_embed WHERE kb = ?), 0)`, name).Scan(&dims); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	// The base's chunks, not its vectors: a bound on them counted without
	// reading the vectors' pages.
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM kb_chunks c JOIN kb_files f ON f.id = c.file
		WHERE f.kb = ?`, name).Scan(&n); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	if n*dims > maxCachedFloats {
		return nil, nil
	}
	x := &vecIndex{stamp: stamp, dims: dims, ids: make([]int64, 0, n), vecs: make([]float32, 0, n*dims)}
	rows, err := s.db.QueryContext(ctx, `SELECT v.chunk, v.vec FROM kb_vectors v JOIN kb_chunks c ON c.id = v.chunk
		JOIN kb_files f ON f.id = c.file WHERE f.kb = ?`, name)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var blob sql.RawBytes
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("store: search %s: %w", name, err)
		}
		if len(blob) != 4*dims {
			return nil, fmt.Errorf("store: search %s: a stored vector has %d dimensions, the base's %d: %w", name, len(blob)/4, dims, ErrDims)
		}
		x.ids = append(x.ids, id)
		for i := 0; i < len(blob); i += 4 {
			x.vecs = append(x.vecs, math.Float32frombits(binary.LittleEndian.Uint32(blob[i:])))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	s.vecs.put(name, x)
	return x, nil
}

// nearestOf returns the limit rows of x nearest to the unit vector q, best
// first, by an exact scan: dot products of float32 and a bounded heap.
func (x *vecIndex) nearestOf(q []float32, limit int) []hit {
	var top topK
	top.init(limit)
	d := x.dims
	for i, id := range x.ids {
		top.offer(id, float64(dot32(q, x.vecs[i*d:(i+1)*d])))
	}
	return top.sorted()
}

// dot32 is the dot product of two vectors of one length, in four
// independent sums the processor runs side by side.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// topK keeps the k best hits seen: a min-heap by score, its root the worst
// kept, so a hit no better than it costs one comparison.
type topK struct {
	h []hit
	k int
}

func (t *topK) init(k int) { t.h, t.k = make([]hit, 0, k), k }

func (t *topK) offer(id int64, score float64) {
	if len(t.h) < t.k {
		t.h = append(t.h, hit{id, score})
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.h[p].score <= t.h[i].score {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if t.k == 0 || score <= t.h[0].score {
		return
	}
	t.h[0] = hit{id, score}
	t.down(0, len(t.h))
}

// down restores the heap below i within the first n hits.
func (t *topK) down(i, n int) {
	for {
		l, m := 2*i+1, i
		if l < n && t.h[l].score < t.h[m].score {
			m = l
		}
		if r := l + 1; r < n && t.h[r].score < t.h[m].score {
			m = r
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the hits best first; the heap is spent.
func (t *topK) sorted() []hit {
	for n := len(t.h) - 1; n > 0; n-- {
		t.h[0], t.h[n] = t.h[n], t.h[0]
		t.down(0, n)
	}
	return t.h
}
