package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// ErrEmptyQuery: a knowledge base query with no word to search for.
var ErrEmptyQuery = errors.New("store: the query has no words to search for")

// Passage is a chunk found by SearchKB, with where it comes from.
type Passage struct {
	KB        string `json:"kb"`
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Text      string `json:"text"`
	// Score is the BM25 relevance: higher is better; comparable only
	// within one search.
	Score float64 `json:"score"`
}

// Ref returns the passage's reference, path:start-end.
func (p Passage) Ref() string {
	if p.StartLine == p.EndLine {
		return fmt.Sprintf("%s:%d", p.Path, p.StartLine)
	}
	return fmt.Sprintf("%s:%d-%d", p.Path, p.StartLine, p.EndLine)
}

// maxQueryTerms bounds the words of one query: a long user message used as
// a seed query keeps its first words, and the search stays fast.
const maxQueryTerms = 32

// SearchKB returns up to limit passages of the knowledge base name that
// match words of query, best first (BM25 over the chunks' text, with
// English stemming). Any of the query's words may match, so a passage
// with more of them, and rarer ones, ranks higher. An unknown base is an
// error wrapping ErrNotFound; a query without words, ErrEmptyQuery.
func (s *Store) SearchKB(ctx context.Context, name, query string, limit int) ([]Passage, error) {
	if err := s.KBExists(ctx, name); err != nil {
		return nil, err
	}
	match := matchQuery(query)
	if match == "" {
		return nil, ErrEmptyQuery
	}
	if limit <= 0 {
		limit = 10
	}
	rows, err := s.db.QueryContext(ctx, `SELECT f.path, c.start_line, c.end_line, kb_text.text, bm25(kb_text) AS rank
		FROM kb_text JOIN kb_chunks c ON c.id = kb_text.rowid JOIN kb_files f ON f.id = c.file
		WHERE kb_text MATCH ? AND f.kb = ?
		ORDER BY rank LIMIT ?`, match, name, limit)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	defer rows.Close()
	var out []Passage
	for rows.Next() {
		p := Passage{KB: name}
		var rank float64
		if err := rows.Scan(&p.Path, &p.StartLine, &p.EndLine, &p.Text, &rank); err != nil {
			return nil, fmt.Errorf("store: search %s: %w", name, err)
		}
		// SQLite's bm25() is negative, lower being better.
		p.Score = -rank
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", name, err)
	}
	return out, nil
}

// matchQuery turns free text into an FTS5 query: its distinct words, each
// quoted (so nothing in the text is read as FTS5 syntax), joined by OR.
// Common English words are dropped when other words remain, since they
// match nearly every passage and say little about relevance.
func matchQuery(text string) string {
	var terms, common []string
	for _, w := range words(text) {
		if stopWords[w] {
			common = append(common, w)
			continue
		}
		if len(terms) < maxQueryTerms {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		terms = common[:min(len(common), maxQueryTerms)]
	}
	return orQuery(terms)
}

// words returns the distinct words of text, lowercased, in order: runs of
// letters and digits.
func words(text string) []string {
	ws := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	seen := make(map[string]bool, len(ws))
	out := ws[:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// phrase quotes a word as an FTS5 string, in which nothing is syntax: a
// double quote is written twice, and a NUL, which would end the query, is
// dropped.
func phrase(word string) string {
	return `"` + strings.NewReplacer(`"`, `""`, "\x00", "").Replace(word) + `"`
}

// orQuery is the FTS5 query matching any of words; "" for none.
func orQuery(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = phrase(w)
	}
	return strings.Join(q, " OR ")
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a an and are as at be by can could do does for from has have how i in is it its
		me my of on or our please should so that the their them then there these this to us was we were what when
		where which who why will with would you your`) {
		m[w] = true
	}
	return m
}()

// The knowledge seed searches for the user's message at the start of every
// turn (DESIGN §7.3). A message is long and mostly common words, and BM25
// scores every passage that any word of the query matches, so the seed
// searches only for the message's rarest words: SeedKBQuery counts the
// passages holding each word and keeps the rarest ones, as long as they
// match few enough passages in all, and SearchKBs scores those passages
// once for all the bases searched.
const (
	// seedWords bounds the distinct words of a message whose passages are
	// counted: the first ones, stop words left out.
	seedWords = 48
	// SeedTerms bounds the words a seed query searches for.
	SeedTerms = 8
	// SeedRows bounds the passages a seed query matches, summed over its
	// words: a word whose passages would take the sum over it is left out
	// with all the more common ones. It bounds the query's cost (a few µs
	// per passage scored), and so the seed never searches for a word that
	// holds more passages than this.
	SeedRows = 1000
)

// KBTerm is a word of a knowledge base query, with the number of passages,
// over all knowledge bases, holding it (counted up to SeedRows+1).
type KBTerm struct {
	Word     string `json:"word"`
	Passages int    `json:"passages"`
}

// KBQuery is a knowledge base query planned by SeedKBQuery: the passages
// holding any of its words match, ranked by BM25. Without words it matches
// nothing.
type KBQuery struct {
	// Terms are the words searched for, rarest first.
	Terms []KBTerm `json:"terms"`
	// Passages is the number of passages in all knowledge bases.
	Passages int `json:"passages"`
}

// match is the FTS5 query of q.
func (q KBQuery) match() string {
	ws := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		ws[i] = t.Word
	}
	return orQuery(ws)
}

// SeedKBQuery plans the knowledge seed's query for a user's message: of
// its first distinct words (stop words left out), the rarest ones that some
// passage holds, at most SeedTerms of them and SeedRows passages in all.
// A word held by half the passages or more is left out too, as BM25 gives
// it no weight, unless no rarer word is left. A message without such a word
// (only stop words, punctuation, words no passage holds, or only very
// common words) gives a query without terms, and no error.
func (s *Store) SeedKBQuery(ctx context.Context, message string) (KBQuery, error) {
	var cands []string
	for _, w := range words(message) {
		if !stopWords[w] {
			cands = append(cands, w)
			if len(cands) == seedWords {
				break
			}
		}
	}
	if len(cands) == 0 {
		return KBQuery{}, nil
	}
	// One statement counts the passages of every word, each count stopping
	// past SeedRows, and all the passages.
	var sb strings.Builder
	sb.WriteString(`SELECT (SELECT count(*) FROM kb_chunks)`)
	// The limit is a literal: SQLite hands it to FTS5 when planning, so a
	// bound one would have the statement prepared again on every run.
	args := make([]any, len(cands))
	for i, w := range cands {
		fmt.Fprintf(&sb, `, (SELECT count(*) FROM (SELECT 1 FROM kb_text WHERE kb_text MATCH ? LIMIT %d))`, SeedRows+1)
		args[i] = phrase(w)
	}
	counts := make([]int, len(cands))
	dest := make([]any, len(cands)+1)
	var q KBQuery
	dest[0] = &q.Passages
	for i := range counts {
		dest[i+1] = &counts[i]
	}
	if err := s.db.QueryRowContext(ctx, sb.String(), args...).Scan(dest...); err != nil {
		return KBQuery{}, fmt.Errorf("store: seed query: %w", err)
	}
	terms := make([]KBTerm, 0, len(cands))
	for i, w := range cands {
		if n := counts[i]; n > 0 && n <= SeedRows {
			terms = append(terms, KBTerm{Word: w, Passages: n})
		}
	}
	// Rarest first; among equals, the message's order.
	slices.SortStableFunc(terms, func(a, b KBTerm) int { return a.Passages - b.Passages })
	sum := 0
	for _, t := range terms {
		if len(q.Terms) == SeedTerms || sum+t.Passages > SeedRows {
			break
		}
		if 2*t.Passages >= q.Passages {
			break // this word and the ones after: no weight in BM25
		}
		q.Terms = append(q.Terms, t)
		sum += t.Passages
	}
	if len(q.Terms) == 0 && len(terms) > 0 {
		// Only common words: the rarest still picks passages in a small
		// base, all of whose passages may be about it.
		q.Terms = terms[:1]
	}
	return q, nil
}

// SearchKBs returns the passages of each knowledge base of names that best
// match q, up to limit of each, best first: one result per name, in order.
// The passages of all the bases are scored in one search. An unknown base
// is an error wrapping ErrNotFound; a query without terms, ErrEmptyQuery.
func (s *Store) SearchKBs(ctx context.Context, names []string, q KBQuery, limit int) ([][]Passage, error) {
	for _, name := range names {
		if err := s.KBExists(ctx, name); err != nil {
			return nil, err
		}
	}
	if len(q.Terms) == 0 {
		return nil, ErrEmptyQuery
	}
	out := make([][]Passage, len(names))
	if len(names) == 0 {
		return out, nil
	}
	if limit <= 0 {
		limit = 10
	}
	// BM25 is computed for every passage matched, its rank numbered within
	// its base, and only the passages kept are read.
	args := []any{q.match(), limit}
	for _, name := range names {
		args = append(args, name)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.kb, m.path, m.start_line, m.end_line, t.text, m.rank FROM (
		SELECT r.*, row_number() OVER (PARTITION BY r.kb ORDER BY r.rank, r.id) AS n FROM (
			SELECT f.kb, c.id, f.path, c.start_line, c.end_line, bm25(kb_text) AS rank
			FROM kb_text JOIN kb_chunks c ON c.id = kb_text.rowid JOIN kb_files f ON f.id = c.file
			WHERE kb_text MATCH ?1 AND f.kb IN (?3`+strings.Repeat(", ?", len(names)-1)+`)) r) m
		JOIN kb_text t ON t.rowid = m.id
		WHERE m.n <= ?2 ORDER BY m.kb, m.n`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", strings.Join(names, ", "), err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Passage
		var rank float64
		if err := rows.Scan(&p.KB, &p.Path, &p.StartLine, &p.EndLine, &p.Text, &rank); err != nil {
			return nil, fmt.Errorf("store: search %s: %w", strings.Join(names, ", "), err)
		}
		p.Score = -rank
		for i, name := range names {
			if name == p.KB {
				out[i] = append(out[i], p)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %s: %w", strings.Join(names, ", "), err)
	}
	return out, nil
}
