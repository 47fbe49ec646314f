package store

import (
	"context"
	"errors"
	"fmt"
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
	if err := s.kbExists(ctx, name); err != nil {
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
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	seen := map[string]bool{}
	var terms, common []string
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
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
	for i, t := range terms {
		terms[i] = `"` + t + `"`
	}
	return strings.Join(terms, " OR ")
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
