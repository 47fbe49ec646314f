package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func doc(path, hash string, texts ...string) KBDoc {
	d := KBDoc{Path: path, Hash: hash, ModTime: time.Unix(1, 0)}
	for i, t := range texts {
		d.Chunks = append(d.Chunks, KBChunk{StartLine: i*10 + 1, EndLine: i*10 + 9, Text: t})
		d.Size += int64(len(t))
	}
	return d
}

func TestPutKBDocsAddsReplacesAndSkipsUnchanged(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	put, err := s.PutKBDocs(ctx, "docs", []KBDoc{doc("a.md", "h1", "alpha text", "beta text"), doc("b.md", "h2", "gamma")})
	if err != nil {
		t.Fatal(err)
	}
	if put != (KBPut{Added: 2, Chunks: 3}) {
		t.Fatalf("first put = %+v", put)
	}
	put, err = s.PutKBDocs(ctx, "docs", []KBDoc{doc("a.md", "h1", "alpha text", "beta text"), doc("b.md", "h3", "delta")})
	if err != nil {
		t.Fatal(err)
	}
	if put != (KBPut{Updated: 1, Unchanged: 1, Chunks: 1}) {
		t.Fatalf("second put = %+v", put)
	}
	kb, err := s.KB(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if kb.Files != 2 || kb.Chunks != 3 {
		t.Fatalf("kb = %+v, want 2 files and 3 chunks", kb)
	}
	// The replaced file's old text is gone from the index.
	if ps, err := s.SearchKB(ctx, "docs", "gamma", 5); err != nil || len(ps) != 0 {
		t.Fatalf("search gamma after replacing b.md = %v, %v; want nothing", ps, err)
	}
	if ps, err := s.SearchKB(ctx, "docs", "delta", 5); err != nil || len(ps) != 1 || ps[0].Path != "b.md" {
		t.Fatalf("search delta = %v, %v; want b.md", ps, err)
	}
}

func TestSearchKBRanksThePassageWithTheQueryTermsFirst(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	_, err := s.PutKBDocs(ctx, "k", []KBDoc{
		doc("intro.md", "1", "Welcome to the project. This guide explains how to get started."),
		doc("db.md", "2", "The store keeps threads in SQLite. Migrations run in order at open."),
		doc("retry.md", "3", "Retries back off exponentially when the provider is rate limited; the retry budget is three attempts."),
		doc("misc.md", "4", "Retry once."),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another base holding the same words is not searched.
	if _, err := s.PutKBDocs(ctx, "other", []KBDoc{doc("x.md", "5", "rate limited retries back off")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  string
	}{
		{"how do retries back off when rate limited?", "retry.md"},
		{"SQLite migrations", "db.md"},
		{"getting started guide", "intro.md"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			ps, err := s.SearchKB(ctx, "k", tc.query, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 0 || ps[0].Path != tc.want {
				t.Fatalf("top passages = %+v, want %s first", ps, tc.want)
			}
			for _, p := range ps {
				if p.KB != "k" {
					t.Fatalf("passage from base %s", p.KB)
				}
			}
			for i := 1; i < len(ps); i++ {
				if ps[i].Score > ps[i-1].Score {
					t.Fatalf("passages not best first: %+v", ps)
				}
			}
		})
	}
}

func TestSearchKBRefusesBadInput(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if _, err := s.PutKBDocs(ctx, "k", []KBDoc{doc("a.md", "1", `say "hello" AND NEAR(x) * world`)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kb, query string
		want            error
	}{
		{"unknown base", "nope", "hello", ErrNotFound},
		{"no words", "k", "  ?! ", ErrEmptyQuery},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.SearchKB(ctx, tc.kb, tc.query, 3); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// FTS5 syntax in a query is read as words.
	ps, err := s.SearchKB(ctx, "k", `"hello" AND NEAR(x) OR *`, 3)
	if err != nil || len(ps) != 1 {
		t.Fatalf("syntax as words: %v, %v", ps, err)
	}
}

func TestMatchQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Retry budget", `"retry" OR "budget"`},
		{"what is the retry budget?", `"retry" OR "budget"`},
		{"the what", `"the" OR "what"`},
		{`"x" NEAR(y)`, `"x" OR "near" OR "y"`},
		{"... --", ""},
		{"дом Haus дом", `"дом" OR "haus"`},
	}
	for _, tc := range tests {
		if got := matchQuery(tc.in); got != tc.want {
			t.Errorf("matchQuery(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	var many []string
	for i := range 100 {
		many = append(many, strings.Repeat("a", i%5+1)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if n := strings.Count(matchQuery(strings.Join(many, " ")), " OR ") + 1; n != maxQueryTerms {
		t.Fatalf("%d terms, want at most %d", n, maxQueryTerms)
	}
}

func TestKBNamesListFilesAndDelete(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("n", 65), "-x"} {
		if _, err := s.PutKBDocs(ctx, bad, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("PutKBDocs(%q) err = %v, want ErrInvalidName", bad, err)
		}
	}
	if _, err := s.PutKBDocs(ctx, "b", []KBDoc{doc("z.go", "1", "package z"), doc("a.go", "2", "package a", "func A()")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutKBDocs(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	kbs, err := s.KBs(ctx)
	if err != nil || len(kbs) != 2 || kbs[0].Name != "a" || kbs[1].Name != "b" {
		t.Fatalf("KBs = %+v, %v", kbs, err)
	}
	files, err := s.KBFiles(ctx, "b")
	if err != nil || len(files) != 2 || files[0].Path != "a.go" || files[0].Chunks != 2 {
		t.Fatalf("KBFiles = %+v, %v", files, err)
	}
	if _, err := s.KBFiles(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("KBFiles(unknown) err = %v", err)
	}
	if err := s.DeleteKB(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKB(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete err = %v", err)
	}
	var rows int
	if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM kb_text) + (SELECT count(*) FROM kb_chunks) + (SELECT count(*) FROM kb_files)`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("rows left after delete: %d, %v", rows, err)
	}
}
