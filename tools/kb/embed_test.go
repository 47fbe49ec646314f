package kb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/store"
)

const embedModel = "mock:embed-1"

// mockEmbedder is a mock embeddings server with the labelled set's
// concepts, and the real client speaking to it over HTTP.
func mockEmbedder(t testing.TB) (*testkit.EmbedServer, Embedders) {
	t.Helper()
	f, err := os.Open("testdata/recall/concepts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	concepts, err := testkit.ReadConcepts(f)
	if err != nil {
		t.Fatal(err)
	}
	srv := testkit.NewEmbedServer(256, concepts)
	t.Cleanup(srv.Close)
	e, err := openai.NewEmbedder(openai.EmbedderOptions{BaseURL: srv.BaseURL(), APIKey: "test", Model: "embed-1", Name: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	return srv, func(model string) (Embedder, error) {
		if model != embedModel {
			return nil, fmt.Errorf("no embedder for %s", model)
		}
		return e, nil
	}
}

type labelled struct {
	Query  string `json:"query"`
	Answer string `json:"answer"`
	Kind   string `json:"kind"`
}

// recall is recall@k over the queries of one kind: the share of queries
// whose answering passage is among the first k found.
func recall(t *testing.T, st *store.Store, qs []labelled, kind string, k int, embedders Embedders) (float64, []string) {
	t.Helper()
	hits, n := 0, 0
	var missed []string
	for _, q := range qs {
		if q.Kind != kind {
			continue
		}
		n++
		ps, hybrid, note, err := Search(context.Background(), st, "ferry", q.Query, k, embedders)
		if err != nil {
			t.Fatalf("%q: %v", q.Query, err)
		}
		if embedders != nil && (!hybrid || note != "") {
			t.Fatalf("%q: not a hybrid search (%s)", q.Query, note)
		}
		found := false
		for _, p := range ps {
			found = found || p.Path == q.Answer
		}
		if found {
			hits++
		} else {
			missed = append(missed, q.Query)
		}
	}
	return float64(hits) / float64(n), missed
}

// TestHybridSearchFindsParaphrasesBM25Misses is the labelled set's
// measure (bench/RESULTS-knowledge.md): recall@5 of BM25 alone and of
// BM25 fused with the mock's embeddings, on the literal and the
// paraphrased half of the queries.
func TestHybridSearchFindsParaphrasesBM25Misses(t *testing.T) {
	srv, embedders := mockEmbedder(t)
	st := openStore(t)
	e, _ := embedders(embedModel)
	docs, err := filepath.Abs("testdata/recall/docs")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Add(context.Background(), st, "ferry", []string{docs}, AddOptions{RelativeTo: docs, Embed: e, EmbedModel: embedModel})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 24 || rep.Embedded != rep.Chunks {
		t.Fatalf("added %d files, %d chunks, %d embedded", rep.Files, rep.Chunks, rep.Embedded)
	}
	b, err := os.ReadFile("testdata/recall/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []labelled
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3} {
		bl, _ := recall(t, st, qs, "literal", k, nil)
		bp, _ := recall(t, st, qs, "paraphrase", k, nil)
		hl, _ := recall(t, st, qs, "literal", k, embedders)
		hp, _ := recall(t, st, qs, "paraphrase", k, embedders)
		t.Logf("recall@%d over %d queries: literal BM25 %.2f hybrid %.2f; paraphrased BM25 %.2f hybrid %.2f", k, len(qs), bl, hl, bp, hp)
	}
	const k = 5
	bmLit, _ := recall(t, st, qs, "literal", k, nil)
	bmPar, bmMissed := recall(t, st, qs, "paraphrase", k, nil)
	hyLit, hyLitMissed := recall(t, st, qs, "literal", k, embedders)
	hyPar, hyMissed := recall(t, st, qs, "paraphrase", k, embedders)
	t.Logf("recall@%d over %d queries: literal BM25 %.2f hybrid %.2f; paraphrased BM25 %.2f hybrid %.2f", k, len(qs), bmLit, hyLit, bmPar, hyPar)
	t.Logf("paraphrases BM25 missed: %q", bmMissed)
	t.Logf("paraphrases hybrid missed: %q; literal queries hybrid missed: %q", hyMissed, hyLitMissed)
	if hyPar <= bmPar {
		t.Errorf("hybrid recall@%d on paraphrases %.2f, BM25 %.2f: fusion should find what the words alone miss", k, hyPar, bmPar)
	}
	if hyLit < bmLit {
		t.Errorf("hybrid recall@%d on literal queries %.2f, below BM25's %.2f: fusion lost what the words found", k, hyLit, bmLit)
	}
	if reqs, _ := srv.Counts(); reqs == 0 {
		t.Error("the mock embeddings server was never asked")
	}
}

func TestReAddingEmbedsOnlyTheChangedFiles(t *testing.T) {
	srv, embedders := mockEmbedder(t)
	e, _ := embedders(embedModel)
	st := openStore(t)
	dir := writeTree(t, map[string]string{"a.md": "alpha text", "b.md": "beta text", "c.md": "gamma text"})
	o := AddOptions{RelativeTo: dir, Embed: e, EmbedModel: embedModel}
	rep, err := Add(context.Background(), st, "kb", []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Embedded != 3 {
		t.Fatalf("first add embedded %d chunks, want 3", rep.Embedded)
	}
	_, before := srv.Counts()
	if err := os.WriteFile(filepath.Join(dir, "b.md"), []byte("beta text, revised"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Add(context.Background(), st, "kb", []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	_, after := srv.Counts()
	if rep.Updated != 1 || rep.Unchanged != 2 || rep.Embedded != 1 || after-before != 1 {
		t.Errorf("re-add: %d updated, %d unchanged, %d embedded, %d texts sent; want 1, 2, 1, 1", rep.Updated, rep.Unchanged, rep.Embedded, after-before)
	}
	ps, hybrid, _, err := Search(context.Background(), st, "kb", "revised", 5, embedders)
	if err != nil || !hybrid || len(ps) == 0 || ps[0].Path != "b.md" {
		t.Errorf("search after re-add: %v hybrid %v %+v", err, hybrid, ps)
	}
}

func TestAFailingEmbeddingsEndpoint(t *testing.T) {
	srv, embedders := mockEmbedder(t)
	e, _ := embedders(embedModel)
	st := openStore(t)
	dir := writeTree(t, map[string]string{"a.md": "alpha text about clocks"})
	if _, err := Add(context.Background(), st, "kb", []string{dir}, AddOptions{RelativeTo: dir, Embed: e, EmbedModel: embedModel}); err != nil {
		t.Fatal(err)
	}
	srv.FailWith(429)
	t.Run("search falls back to BM25 and says why", func(t *testing.T) {
		ps, hybrid, note, err := Search(context.Background(), st, "kb", "clocks", 5, embedders)
		if err != nil || hybrid || len(ps) != 1 || !strings.Contains(note, "BM25 only") || !strings.Contains(note, "rate_limited") {
			t.Errorf("err %v hybrid %v note %q passages %d", err, hybrid, note, len(ps))
		}
	})
	t.Run("add keeps the files and reports the typed error", func(t *testing.T) {
		dir2 := writeTree(t, map[string]string{"b.md": "beta"})
		rep, err := Add(context.Background(), st, "kb", []string{dir2}, AddOptions{RelativeTo: dir2, Embed: e, EmbedModel: embedModel})
		if !errors.Is(err, llm.RateLimited) || rep == nil || rep.Added != 1 {
			t.Fatalf("err %v report %+v", err, rep)
		}
		srv.FailWith(0)
		rep, err = Add(context.Background(), st, "kb", []string{dir2}, AddOptions{RelativeTo: dir2, Embed: e, EmbedModel: embedModel})
		if err != nil || rep.Unchanged != 1 || rep.Embedded != 1 {
			t.Errorf("adding again embeds what was left: err %v report %+v", err, rep)
		}
	})
}

func TestAddHonoursGitignoreAndExclude(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".gitignore":          "*.log\nbuild/\n/top.txt\n!keep.log\n",
		"a.md":                "kept",
		"debug.log":           "ignored by *.log",
		"keep.log":            "taken back by !keep.log",
		"top.txt":             "anchored to the root",
		"sub/top.txt":         "not anchored here",
		"build/out.txt":       "ignored directory",
		"sub/.gitignore":      "secret.md\n",
		"sub/secret.md":       "ignored by sub's .gitignore",
		"secret.md":           "sub's rule does not reach up here",
		"vendor/lib.go":       "excluded by --exclude vendor",
		"docs/x_test.go":      "excluded by --exclude *_test.go",
		"docs/deep/y_test.go": "excluded at any depth",
		"bin.dat":             "\x00\x01binary",
	})
	st := openStore(t)
	rep, err := Add(context.Background(), st, "kb", []string{dir}, AddOptions{RelativeTo: dir, Exclude: []string{"vendor", "*_test.go"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := st.KBFiles(context.Background(), "kb")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := []string{"a.md", "keep.log", "secret.md", "sub/top.txt"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", got, want)
	}
	if rep.SkippedCount != 1 || rep.Skipped[0].Reason != "binary" {
		t.Errorf("skipped %+v, want bin.dat as binary", rep.Skipped)
	}
	rep, err = Add(context.Background(), openStore(t), "kb", []string{dir}, AddOptions{RelativeTo: dir, NoGitignore: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 11 {
		t.Errorf("--no-gitignore read %d files, want 11 (every text file but the hidden .gitignore files)", rep.Files)
	}
	if _, err := Add(context.Background(), st, "kb", []string{dir}, AddOptions{Exclude: []string{"[oops"}}); err == nil {
		t.Error("a bad glob: no error")
	}
}

func TestFuseByReciprocalRank(t *testing.T) {
	p := func(path string) store.Passage { return store.Passage{Path: path, StartLine: 1, EndLine: 1} }
	got := fuse(3, []store.Passage{p("a"), p("b"), p("c")}, []store.Passage{p("b"), p("d"), p("a")})
	var paths []string
	for _, x := range got {
		paths = append(paths, x.Path)
	}
	// b: 1/62 + 1/61; a: 1/61 + 1/63; d: 1/62; c: 1/63.
	if strings.Join(paths, " ") != "b a d" {
		t.Errorf("fused %v, want b a d", paths)
	}
}

// TestReadIgnoreNeverOpensAHostileGitignore: a repository's .gitignore
// that is a FIFO (opening it would wait for a writer) or a link to an
// endless file (/dev/zero) is refused at once, and a regular one over the
// bound is not read past it.
func TestReadIgnoreNeverOpensAHostileGitignore(t *testing.T) {
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, ".gitignore"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	link := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(link, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	big := t.TempDir()
	if err := os.WriteFile(filepath.Join(big, ".gitignore"), bytes.Repeat([]byte("x\n"), maxIgnoreFile), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"fifo": fifo, "link to /dev/zero": link, "over the bound": big} {
		done := make(chan error, 1)
		go func() {
			_, err := readIgnore(dir)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: read without an error", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: readIgnore still reading after 10 s", name)
		}
	}
}
