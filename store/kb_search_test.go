package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// seedCorpus is a small fixed base about a client and a server: most
// passages share the common words (client, server, configuration,
// request), a few words belong to one passage.
var seedCorpus = []KBDoc{
	doc("intro.md", "1", "Welcome to the project. This guide explains how to get started with the client and the server; read the configuration section first."),
	doc("config.md", "2", "The configuration file sets the server address, the request timeout and the log level. The client reads the configuration when it starts."),
	doc("retry.md", "3", "The client retries a failed request with exponential backoff; the retry budget is three attempts, and jitter spreads the retries."),
	doc("auth.md", "4", "The server checks the token of every request. Tokens expire after an hour; the client refreshes them at the refresh endpoint."),
	doc("store.md", "5", "The server keeps its data in SQLite. Migrations run in order when the server starts; a failed migration stops the server."),
	doc("logging.md", "6", "Set the log level in the configuration. The server writes structured logs; the client logs to standard error."),
	doc("deploy.md", "7", "Deploy the server with the container image. The healthcheck endpoint answers once the server is ready for requests."),
	doc("cache.md", "8", "The client caches the responses of the server for as long as the server allows; a configuration change clears the cache."),
	doc("ratelimit.md", "9", "A rate limited server answers 429, and the client waits for the Retry-After header before its next request."),
	doc("i18n.md", "10", "Übersetzungen: die Straße heißt Café Größe. Ελληνικά κείμενα για τον διακομιστή. 東京 サーバー の 設定."),
}

func seedStore(t testing.TB) *Store {
	t.Helper()
	s := openTemp(t)
	if _, err := s.PutKBDocs(context.Background(), "k", seedCorpus); err != nil {
		t.Fatal(err)
	}
	return s
}

func termWords(q KBQuery) []string {
	var ws []string
	for _, t := range q.Terms {
		ws = append(ws, t.Word)
	}
	return ws
}

// longMessage is a user message of many common words, stop words and
// words of no passage, with one rare word far in: healthcheck.
const longMessage = `Hi! So I have been running the client against the server for a while now, and the configuration
seems fine to me: the server starts, the client starts, the client sends its request, the server answers the request,
the logs look normal, the configuration has the usual server address and the client timeout, and I restarted the client
and the server twice, but the client still says the server is not ready. Some people on the team think the
configuration is wrong, others that the client is wrong, others that the server is slow. Before I change the
configuration again or restart the server or the client a third time: what does the healthcheck really check?`

func TestSeedKBQueryKeepsTheRarestWords(t *testing.T) {
	s := seedStore(t)
	ctx := context.Background()
	q, err := s.SeedKBQuery(ctx, longMessage)
	if err != nil {
		t.Fatal(err)
	}
	if q.Passages != len(seedCorpus) || len(q.Terms) == 0 || len(q.Terms) > SeedTerms {
		t.Fatalf("query = %+v", q)
	}
	// The word is past the first maxQueryTerms a rag query keeps.
	var cands []string
	for _, w := range words(longMessage) {
		if !stopWords[w] {
			cands = append(cands, w)
		}
	}
	if i := slices.Index(cands, "healthcheck"); i < maxQueryTerms || i >= seedWords {
		t.Fatalf("healthcheck is word %d of the message; the test wants it in [%d, %d)", i, maxQueryTerms, seedWords)
	}
	if !slices.Contains(q.Terms, KBTerm{Word: "healthcheck", Passages: 1}) {
		t.Fatalf("terms = %+v, want healthcheck", q.Terms)
	}
	for i, term := range q.Terms {
		if term.Passages == 0 || 2*term.Passages >= q.Passages {
			t.Errorf("term %+v: held by none or by half the passages or more", term)
		}
		if i > 0 && term.Passages < q.Terms[i-1].Passages {
			t.Errorf("terms not rarest first: %+v", q.Terms)
		}
		if stopWords[term.Word] {
			t.Errorf("stop word %q searched", term.Word)
		}
	}
	// Only common words: the rarest one still seeds a small base.
	q, err = s.SeedKBQuery(ctx, "the client and the server")
	if err != nil || fmt.Sprint(termWords(q)) != "[client]" {
		t.Fatalf("common words: %+v, %v; want client alone (rarer than server, both in half the passages or more)", q, err)
	}
}

func TestSeedKBQueryWithoutWordsIsEmptyNotAnError(t *testing.T) {
	s := seedStore(t)
	ctx := context.Background()
	for _, msg := range []string{"", "   ", "?!...", "what is it?", "how do I do this, and why?", "zebra quagga", "*", `""`, "--- :: ()"} {
		q, err := s.SeedKBQuery(ctx, msg)
		if err != nil || len(q.Terms) != 0 {
			t.Errorf("SeedKBQuery(%q) = %+v, %v; want no terms, no error", msg, q, err)
		}
		if _, err := s.SearchKBs(ctx, []string{"k"}, q, 3); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("SearchKBs(no terms) err = %v, want ErrEmptyQuery", err)
		}
	}
}

// seedTop searches base k of s for msg as the seed does and returns the
// paths found, best first.
func seedTop(t *testing.T, s *Store, msg string) []string {
	t.Helper()
	ctx := context.Background()
	q, err := s.SeedKBQuery(ctx, msg)
	if err != nil {
		t.Fatalf("SeedKBQuery(%q): %v", msg, err)
	}
	if len(q.Terms) == 0 {
		return nil
	}
	res, err := s.SearchKBs(ctx, []string{"k"}, q, 3)
	if err != nil {
		t.Fatalf("SearchKBs(%q): %v", msg, err)
	}
	var paths []string
	for _, p := range res[0] {
		paths = append(paths, p.Path)
	}
	return paths
}

func TestSeedFindsTheRightPassages(t *testing.T) {
	s := seedStore(t)
	tests := []struct{ msg, want string }{
		{"How do retries back off when a request fails?", "retry.md"},
		{"Where are the migrations run?", "store.md"},
		{"how does the client refresh an expired token", "auth.md"},
		{"the server answers 429, what should the client do?", "ratelimit.md"},
		{"does the client cache what the server sends?", "cache.md"},
		{longMessage, "deploy.md"},
		// Quotes and FTS5 syntax are words like the others.
		{`"healthcheck" AND NEAR(deploy, image) OR container* ^ -x {col}: "`, "deploy.md"},
		// Other scripts, case and diacritics.
		{"Wo ist die STRASSE? Die Straße!", "i18n.md"},
		{"cafe", "i18n.md"},
		{"ΚΕΊΜΕΝΑ", "i18n.md"},
		{"東京", "i18n.md"},
	}
	for _, tc := range tests {
		name := tc.msg
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			got := seedTop(t, s, tc.msg)
			if len(got) == 0 || got[0] != tc.want {
				t.Fatalf("seed found %v, want %s first", got, tc.want)
			}
		})
	}
}

func TestSeedKBQueryStaysWithinItsRows(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	// 2·SeedRows passages, all holding "common"; "half" in one passage of
	// two (as many as SeedRows); "third" in a third of them... and
	// "fifth", "tenth", "rare" in fewer.
	n := 2 * SeedRows
	var docs []KBDoc
	for i := range n {
		text := "common"
		for _, w := range []struct {
			word  string
			every int
		}{{"half", 2}, {"third", 3}, {"fifth", 5}, {"tenth", 10}} {
			if i%w.every == 0 {
				text += " " + w.word
			}
		}
		if i == 7 {
			text += " rare"
		}
		docs = append(docs, doc(fmt.Sprintf("f%04d.md", i), fmt.Sprint(i), text))
	}
	if _, err := s.PutKBDocs(ctx, "k", docs); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ msg, want string }{
		// rare 1 + tenth 200 + fifth 400: 601; third (667) would take the
		// sum over SeedRows, half and common are over it alone.
		{"common half third fifth tenth rare", "[rare tenth fifth]"},
		{"common half third", "[third]"},
		{"common half", "[half]"},
		// A word in more than SeedRows passages is never searched.
		{"common", "[]"},
	}
	for _, tc := range tests {
		q, err := s.SeedKBQuery(ctx, tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(termWords(q)); got != tc.want {
			t.Errorf("SeedKBQuery(%q) = %+v, want %s", tc.msg, q.Terms, tc.want)
		}
		sum := 0
		for _, term := range q.Terms {
			sum += term.Passages
		}
		if sum > SeedRows {
			t.Errorf("SeedKBQuery(%q) matches %d passages, more than %d", tc.msg, sum, SeedRows)
		}
	}
}

func TestSearchKBsSearchesEachBase(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, kb := range []string{"a", "b", "c"} {
		var docs []KBDoc
		for i := range 5 {
			docs = append(docs, doc(fmt.Sprintf("%s%d.md", kb, i), fmt.Sprint(i), strings.Repeat("backoff ", i+1)+"retry budget "+kb))
		}
		if _, err := s.PutKBDocs(ctx, kb, docs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutKBDocs(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	q := KBQuery{Terms: []KBTerm{{Word: "backoff"}}}
	res, err := s.SearchKBs(ctx, []string{"c", "empty", "a", "a"}, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || len(res[1]) != 0 {
		t.Fatalf("results = %+v", res)
	}
	for i, kb := range []string{"c", "", "a", "a"} {
		if kb == "" {
			continue
		}
		ps := res[i]
		if len(ps) != 3 {
			t.Fatalf("%s: %d passages, want 3", kb, len(ps))
		}
		for j, p := range ps {
			if p.KB != kb || !strings.HasPrefix(p.Path, kb) {
				t.Fatalf("%s: passage %+v of another base", kb, p)
			}
			if j > 0 && p.Score > ps[j-1].Score {
				t.Fatalf("%s: passages not best first: %+v", kb, ps)
			}
		}
		// The passage saying backoff most often, and shortest for it.
		if ps[0].Path != kb+"4.md" || ps[0].Text == "" {
			t.Fatalf("%s: best = %+v", kb, ps[0])
		}
	}
	if _, err := s.SearchKBs(ctx, []string{"a", "nope"}, q, 3); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown base: err = %v", err)
	}
	// A word written by hand is still a word, not FTS5 syntax.
	for _, w := range []string{`back"off`, `"`, `*`, `NEAR(a b)`, ""} {
		if _, err := s.SearchKBs(ctx, []string{"a"}, KBQuery{Terms: []KBTerm{{Word: w}}}, 3); err != nil {
			t.Errorf("word %q: %v", w, err)
		}
	}
}

// FuzzKBQueries holds that no text, as a rag query or as a message to
// seed from, makes an FTS5 syntax error.
func FuzzKBQueries(f *testing.F) {
	for _, seed := range []string{
		"how do retries back off?", longMessage, `"`, `""`, `" OR "`, `a"b`, "NEAR(a b, 2)", "col: x", "^x", "x*",
		"-x", "{a b}: c", "(a OR b) AND NOT c", "AND", "OR", "NOT", "\x00", "é\u0301", "東京", "\uFFFD", "a\u200db",
		"ǅ ß İ ﬁ", "٣ ① ½", strings.Repeat("x", 300),
	} {
		f.Add(seed)
	}
	s := seedStore(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := s.SearchKB(ctx, "k", text, 3); err != nil && !errors.Is(err, ErrEmptyQuery) {
			t.Fatalf("SearchKB(%q): %v", text, err)
		}
		q, err := s.SeedKBQuery(ctx, text)
		if err != nil {
			t.Fatalf("SeedKBQuery(%q): %v", text, err)
		}
		if _, err := s.SearchKBs(ctx, []string{"k"}, q, 3); err != nil && !errors.Is(err, ErrEmptyQuery) {
			t.Fatalf("SearchKBs(%q): %v", text, err)
		}
		// And as words written into a query by hand.
		q = KBQuery{Terms: []KBTerm{{Word: text}}}
		if _, err := s.SearchKBs(ctx, []string{"k"}, q, 3); err != nil {
			t.Fatalf("SearchKBs(word %q): %v", text, err)
		}
	})
}
