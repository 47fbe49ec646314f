package kb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// writeTree writes files (path → content) under a fresh directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func call(t *testing.T, tl tool.Tool, args any) tool.Output {
	t.Helper()
	b, _ := json.Marshal(args)
	out, err := tl.Run(context.Background(), tool.Call{Args: b})
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Spec().Name, b, err)
	}
	return out
}

var corpus = map[string]string{
	"docs/retry.md":   "# Retries\n\nThe client retries a rate limited request with exponential backoff.\nThe retry budget is three attempts.\n",
	"docs/store.md":   "# Store\n\nThreads live in SQLite, in WAL mode.\nMigrations are applied in order when the store opens.\n",
	"docs/intro.md":   "# Introduction\n\nThis guide explains how to install the tool and get started.\n",
	"src/client.go":   "package client\n\n// Do sends the request.\nfunc Do() error { return nil }\n",
	"src/backoff.go":  "package client\n\n// backoff doubles the wait after each attempt.\nfunc backoff(n int) int { return 1 << n }\n",
	".hidden/x.md":    "retries retries retries",
	"node_modules/y":  "retries retries retries",
	"assets/logo.png": "\x89PNG\x00\x00binary",
}

func addCorpus(t *testing.T, st *store.Store, name string) (string, *AddReport) {
	t.Helper()
	dir := writeTree(t, corpus)
	rep, err := Add(context.Background(), st, name, []string{dir}, AddOptions{RelativeTo: dir})
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}

func TestAddReadsTextFilesAndSkipsTheRest(t *testing.T) {
	st := openStore(t)
	dir, rep := addCorpus(t, st, "k")
	if rep.Files != 5 || rep.Added != 5 || rep.SkippedCount != 1 || rep.Skipped[0].Reason != "binary" {
		t.Fatalf("report = %+v", rep)
	}
	files, err := st.KBFiles(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	want := "docs/intro.md docs/retry.md docs/store.md src/backoff.go src/client.go"
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("paths = %s, want %s", got, want)
	}
	// Adding again changes nothing; a changed file is replaced.
	if err := os.WriteFile(filepath.Join(dir, "docs", "intro.md"), []byte("# Intro\n\nNew text.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Add(context.Background(), st, "k", []string{dir}, AddOptions{RelativeTo: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unchanged != 4 || rep.Updated != 1 || rep.Added != 0 {
		t.Fatalf("second add = %+v", rep)
	}
}

func TestAddRefusesBadInput(t *testing.T) {
	st := openStore(t)
	dir := writeTree(t, map[string]string{"big.txt": strings.Repeat("x", 100), "ok.txt": "fine"})
	tests := []struct {
		name  string
		kb    string
		paths []string
		want  error
	}{
		{"no paths", "k", nil, nil},
		{"missing path", "k", []string{filepath.Join(dir, "nope")}, os.ErrNotExist},
		{"bad name", "a/b", []string{dir}, store.ErrInvalidName},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Add(context.Background(), st, tc.kb, tc.paths, AddOptions{RelativeTo: dir})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	rep, err := Add(context.Background(), st, "k", []string{dir}, AddOptions{RelativeTo: dir, MaxFileSize: 50})
	if err != nil || rep.Files != 1 || rep.SkippedCount != 1 || !strings.HasPrefix(rep.Skipped[0].Reason, "too large") {
		t.Fatalf("size limit: %+v, %v", rep, err)
	}
	// Files outside RelativeTo keep their absolute paths.
	other := writeTree(t, map[string]string{"o.md": "outside"})
	if _, err := Add(context.Background(), st, "abs", []string{filepath.Join(other, "o.md")}, AddOptions{RelativeTo: dir}); err != nil {
		t.Fatal(err)
	}
	files, _ := st.KBFiles(context.Background(), "abs")
	if len(files) != 1 || files[0].Path != filepath.ToSlash(filepath.Join(other, "o.md")) {
		t.Fatalf("outside file = %+v", files)
	}
}

func TestRagRanksThePassageWithTheQueryTermsFirst(t *testing.T) {
	st := openStore(t)
	addCorpus(t, st, "k")
	rag := Rag(st, []string{"k"})
	tests := []struct{ query, first string }{
		{"how many retry attempts when rate limited?", "docs/retry.md:1-4"},
		{"SQLite WAL migrations", "docs/store.md:1-4"},
		{"backoff doubles the wait", "src/backoff.go:1-4"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			out := call(t, rag, map[string]any{"query": tc.query, "kb_name": "k"})
			if out.Failed {
				t.Fatalf("failed: %s", out.Text)
			}
			if !strings.Contains(out.Text, "[1] "+tc.first+"\n") {
				t.Fatalf("want %s first:\n%s", tc.first, out.Text)
			}
			var meta struct{ Sources []Ref }
			if err := json.Unmarshal(out.Meta, &meta); err != nil || len(meta.Sources) == 0 {
				t.Fatalf("meta %s: %v", out.Meta, err)
			}
		})
	}
}

func TestRagRefusesBadInput(t *testing.T) {
	st := openStore(t)
	addCorpus(t, st, "k")
	rag := Rag(st, []string{"k"})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"not attached", map[string]any{"query": "x", "kb_name": "other"}, "not attached"},
		{"no words", map[string]any{"query": "?!", "kb_name": "k"}, "no words"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, rag, tc.args)
			if !out.Failed || !strings.Contains(out.Text, tc.want) {
				t.Fatalf("out = %+v, want a failure saying %q", out, tc.want)
			}
		})
	}
	out := call(t, rag, map[string]any{"query": "zebra", "kb_name": "k"})
	if out.Failed || !strings.Contains(out.Text, "no passage") {
		t.Fatalf("no match: %+v", out)
	}
	// The schema names the attached bases, so dispatch refuses others.
	var schema struct {
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(rag.Spec().Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(schema.Properties["kb_name"]["enum"]) != "[k]" || schema.Properties["query"]["minLength"] != float64(1) {
		t.Fatalf("schema = %s", rag.Spec().Schema)
	}
	if _, err := tool.NewValidator(rag.Spec()); err != nil {
		t.Fatalf("the adjusted schema does not compile: %v", err)
	}
	// A store error is the call's error.
	st.Close()
	if _, err := rag.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"query":"retry","kb_name":"k"}`)}); err == nil {
		t.Fatal("no error from a closed store")
	}
}

func TestKBFilesPatterns(t *testing.T) {
	st := openStore(t)
	addCorpus(t, st, "k")
	files := Files(st, []string{"k"})
	tests := []struct {
		name    string
		args    map[string]any
		head    string
		listed  []string
		failure string
	}{
		{"all", map[string]any{"kb_name": "k"}, "k holds 5 files:", []string{"docs/intro.md", "src/client.go"}, ""},
		{"glob with directories", map[string]any{"kb_name": "k", "pattern": "docs/*.md"}, "3 of the 5 files of k match", []string{"docs/retry.md"}, ""},
		{"glob on names", map[string]any{"kb_name": "k", "pattern": "*.go"}, "2 of the 5 files", []string{"src/backoff.go", "src/client.go"}, ""},
		{"double star", map[string]any{"kb_name": "k", "pattern": "**/c*.go"}, "1 of the 5 files", []string{"src/client.go"}, ""},
		{"substring, any case", map[string]any{"kb_name": "k", "pattern": "STORE"}, "1 of the 5 files", []string{"docs/store.md"}, ""},
		{"limit", map[string]any{"kb_name": "k", "limit": 2}, "k holds 5 files; the first 2 by path:", []string{"docs/intro.md", "docs/retry.md"}, ""},
		{"no match", map[string]any{"kb_name": "k", "pattern": "*.rs"}, "0 of the 5 files", nil, ""},
		{"bad glob", map[string]any{"kb_name": "k", "pattern": "[a"}, "", nil, "not a valid glob"},
		{"not attached", map[string]any{"kb_name": "x"}, "", nil, "not attached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, files, tc.args)
			if tc.failure != "" {
				if !out.Failed || !strings.Contains(out.Text, tc.failure) {
					t.Fatalf("out = %+v, want failure %q", out, tc.failure)
				}
				return
			}
			if out.Failed || !strings.HasPrefix(out.Text, tc.head) {
				t.Fatalf("out =\n%s\nwant it to start with %q", out.Text, tc.head)
			}
			for _, p := range tc.listed {
				if !strings.Contains(out.Text, "\n"+p+"  (") {
					t.Fatalf("%s not listed:\n%s", p, out.Text)
				}
			}
			if tc.name == "limit" && strings.Count(out.Text, "\n") != 2 {
				t.Fatalf("limit not applied:\n%s", out.Text)
			}
		})
	}
}

// failing is an index whose seed searches (SearchKBs) fail for the bases
// it names, and whose seed queries fail when it names "".
type failing struct {
	Index
	bad map[string]bool
}

func (f failing) SeedKBQuery(ctx context.Context, message string) (store.KBQuery, error) {
	if f.bad[""] {
		return store.KBQuery{}, errors.New("database is locked")
	}
	return f.Index.SeedKBQuery(ctx, message)
}

func (f failing) SearchKBs(ctx context.Context, names []string, q store.KBQuery, n int) ([][]store.Passage, error) {
	for _, name := range names {
		if f.bad[name] {
			return nil, errors.New("disk I/O error")
		}
	}
	return f.Index.SearchKBs(ctx, names, q, n)
}

func TestSeedLimits(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	// Five bases, each with many long passages about the same words.
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("kb%d", i)
		names = append(names, name)
		var docs []store.KBDoc
		for j := range 10 {
			text := strings.Repeat(fmt.Sprintf("retry backoff attempt %d %d. ", i, j), 40)
			docs = append(docs, store.KBDoc{Path: fmt.Sprintf("f%d.md", j), Hash: fmt.Sprint(j), Chunks: []store.KBChunk{{StartLine: 1, EndLine: 3, Text: text}}})
		}
		if _, err := st.PutKBDocs(ctx, name, docs); err != nil {
			t.Fatal(err)
		}
	}
	s := Seed(ctx, st, names, "how does retry backoff work?")
	if len(s.KBs) != SeedKBs || len(s.Failed) != 0 {
		t.Fatalf("seed searched %v, failed %v", s.KBs, s.Failed)
	}
	if !strings.HasPrefix(s.Text, SeedHeader+"\n\n## kb0\n### ") {
		t.Fatalf("seed starts %q", s.Text[:min(len(s.Text), 200)])
	}
	sections := strings.Split(strings.TrimPrefix(s.Text, SeedHeader+"\n\n"), "\n\n## ")
	if len(sections) != SeedKBs {
		t.Fatalf("%d sections, want %d", len(sections), SeedKBs)
	}
	for i, sec := range sections {
		_, body, _ := strings.Cut(sec, "\n")
		if n := utf8.RuneCountInString(body); n > SeedChars || n < SeedChars-seedMinPart {
			t.Errorf("section %d has %d characters, want at most %d and close to it", i, n, SeedChars)
		}
	}
	if strings.Contains(s.Text, "## kb3") || strings.Contains(s.Text, "## kb4") {
		t.Fatal("more than 3 bases in the seed")
	}
	for _, p := range s.Sources {
		if !strings.Contains(s.Text, "### "+p.Ref()) {
			t.Fatalf("source %s not in the text", p.Ref())
		}
	}
	ev := s.Event()
	if ev.Type != EventSources || len(ev.Extra["sources"].([]Ref)) != len(s.Sources) {
		t.Fatalf("event = %+v", ev)
	}
	if got := WithSeed("question", s); !strings.HasPrefix(got, "question\n\n"+SeedHeader) {
		t.Fatalf("WithSeed = %q", got[:50])
	}

	// A failing search is reported, and the message goes as it was: a
	// seed never fails a turn.
	for _, bad := range []string{"kb1", ""} {
		s = Seed(ctx, failing{st, map[string]bool{bad: true}}, names[:2], "retry")
		if len(s.Failed) != 1 || !strings.Contains(s.Failed[0], "kb0, kb1: ") || s.Text != "" || WithSeed("m", s) != "m" {
			t.Fatalf("failing %q: failed = %q, text = %q", bad, s.Failed, s.Text)
		}
	}
	// Nothing matching, no words, only stop words, or FTS5 syntax with no
	// word of the bases: no seed, no error, and the message as it was.
	for _, q := range []string{"zebra", "?", "", "what is it? how do I do this, and why?", `"" AND (NEAR(x) OR *) ^ - {col}: "`} {
		s = Seed(ctx, st, names, q)
		if s.Text != "" || len(s.Failed) != 0 || WithSeed("m", s) != "m" {
			t.Fatalf("seed of %q = %+v", q, s)
		}
	}
	if s = Seed(ctx, st, nil, "retry"); s.Text != "" || len(s.Failed) != 0 {
		t.Fatalf("seed of no bases = %+v", s)
	}
}

func TestSeedFindsTheRareWordOfALongMessage(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	// Every passage says client, server and request; one says healthcheck.
	var docs []store.KBDoc
	for i := range 20 {
		text := fmt.Sprintf("The client sends request %d to the server, and the server answers the client's request.", i)
		if i == 13 {
			text += " The healthcheck endpoint answers once the server is ready."
		}
		docs = append(docs, store.KBDoc{Path: fmt.Sprintf("f%02d.md", i), Hash: fmt.Sprint(i), Chunks: []store.KBChunk{{StartLine: 1, EndLine: 1, Text: text}}})
	}
	if _, err := st.PutKBDocs(ctx, "k", docs); err != nil {
		t.Fatal(err)
	}
	msg := strings.Repeat("So the client sends its request to the server, and the server answers the request of the client. ", 10) +
		"What does the HEALTHCHECK check?"
	s := Seed(ctx, st, []string{"k"}, msg)
	if len(s.Sources) != 1 || s.Sources[0].Path != "f13.md" || len(s.Failed) != 0 {
		t.Fatalf("sources = %+v, failed %v; want f13.md alone", s.Sources, s.Failed)
	}
}

func TestSectionCutsALongFirstPassage(t *testing.T) {
	long := store.Passage{Path: "a", StartLine: 1, EndLine: 2, Text: strings.Repeat("é", SeedChars*2)}
	body, used := section([]store.Passage{long, long})
	if used != 1 || utf8.RuneCountInString(body) != SeedChars || !strings.HasSuffix(body, "…") {
		t.Fatalf("used %d, %d characters", used, utf8.RuneCountInString(body))
	}
}
