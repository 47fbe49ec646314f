package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
)

// testFindThreads: a store keeps a thread's owner from its first save,
// and FindThreads filters by owner and by a case-insensitive search of
// titles in which %, _ and \ are plain text.
func testFindThreads(t *testing.T, db DB) {
	s := db.Handle(t)
	f, ok := s.(session.ThreadFinder)
	if !ok {
		t.Skip("the store is no session.ThreadFinder")
	}
	base := time.Now()
	type th struct{ owner, title string }
	threads := []th{
		{"alice", "Fix the Parser"},
		{"bob", "fix the parser too"},
		{"alice", "100% done_now"},
		{"", "admin's parser notes"},
		{"alice", `back\slash`},
		{"alice", "1000 done now"},
	}
	ids := make([]string, len(threads))
	for i, x := range threads {
		ids[i] = id("thread")
		rec := session.Thread{ID: ids[i], Title: x.title, Owner: x.owner, Created: base, Updated: base.Add(time.Duration(i) * time.Second)}
		if err := s.SaveThread(ctx(t), rec); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// A later save (a turn's end) with no owner keeps the first.
	again := session.Thread{ID: ids[0], Title: "Fix the Parser", Created: base, Updated: base.Add(time.Minute)}
	if err := s.SaveThread(ctx(t), again); err != nil {
		t.Fatal(err)
	}
	if got := load(t, s, ids[0]).Thread.Owner; got != "alice" {
		t.Fatalf("owner after a save without one = %q, want alice (set once, at creation)", got)
	}
	// ids[0] was saved last: it is the most recent.
	order := []string{ids[0], ids[5], ids[4], ids[3], ids[2], ids[1]}
	keep := func(want ...string) []string {
		return slices.DeleteFunc(slices.Clone(order), func(id string) bool { return !slices.Contains(want, id) })
	}
	for _, tt := range []struct {
		name string
		q    session.ThreadQuery
		want []string
	}{
		{"everything", session.ThreadQuery{}, order},
		{"alice's", session.ThreadQuery{Owned: true, Owner: "alice"}, keep(ids[0], ids[2], ids[4], ids[5])},
		{"bob's", session.ThreadQuery{Owned: true, Owner: "bob"}, keep(ids[1])},
		{"the admin's own", session.ThreadQuery{Owned: true}, keep(ids[3])},
		{"nobody's", session.ThreadQuery{Owned: true, Owner: "carol"}, nil},
		{"search ignores case", session.ThreadQuery{Search: "PARSER"}, keep(ids[0], ids[1], ids[3])},
		{"search and owner", session.ThreadQuery{Search: "parser", Owned: true, Owner: "alice"}, keep(ids[0])},
		{"percent is literal", session.ThreadQuery{Search: "0%"}, keep(ids[2])},
		{"underscore is literal", session.ThreadQuery{Search: "e_n"}, keep(ids[2])},
		{"backslash is literal", session.ThreadQuery{Search: `k\s`}, keep(ids[4])},
	} {
		got, next, err := f.FindThreads(ctx(t), tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(threadIDs(got), tt.want) || next != "" {
			t.Errorf("%s: FindThreads = %v next %q, want %v", tt.name, threadIDs(got), next, tt.want)
		}
		for _, g := range got {
			if i := slices.Index(ids, g.ID); g.Owner != threads[i].owner {
				t.Errorf("%s: thread %s has owner %q, want %q", tt.name, g.ID, g.Owner, threads[i].owner)
			}
		}
	}
	// Pages of one of alice's threads: the cursor keeps the filter's order.
	var paged []string
	q := session.ThreadQuery{Limit: 1, Owned: true, Owner: "alice"}
	for range 10 {
		page, next, err := f.FindThreads(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, threadIDs(page)...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if want := keep(ids[0], ids[2], ids[4], ids[5]); !slices.Equal(paged, want) {
		t.Errorf("alice's threads one a page = %v, want %v", paged, want)
	}
	if _, _, err := f.FindThreads(ctx(t), session.ThreadQuery{Search: string(make([]byte, 321))}); err == nil {
		t.Error("a search over the bound was accepted")
	}
}
