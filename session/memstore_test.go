package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

// TestMemStoreHistoryIsAppendOnlyAtAnyLength: whether a thread's items
// are found by a scan (a short history) or by the index (a long one), an
// item recorded again is refused, a pause placeholder is replaced by its
// answer in place, and an item recorded after the index is built is found
// by it.
func TestMemStoreHistoryIsAppendOnlyAtAnyLength(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, indexFrom - 2, indexFrom, 3 * indexFrom} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := NewMemStore()
			if err := m.SaveThread(ctx, Thread{ID: "th"}); err != nil {
				t.Fatal(err)
			}
			item := func(i int) llm.Item {
				it := llm.UserText(fmt.Sprint("text ", i))
				it.ID = fmt.Sprint("it", i)
				return it
			}
			for i := range n {
				if err := m.Record(ctx, "th", item(i)); err != nil {
					t.Fatal(err)
				}
			}
			pending := llm.ToolResult(llm.Result{CallID: "c1", Name: "ask", Status: llm.ResultPending})
			pending.ID = "pause"
			if err := m.Record(ctx, "th", pending); err != nil {
				t.Fatal(err)
			}
			last := item(n + 1) // after the placeholder
			if err := m.Record(ctx, "th", last); err != nil {
				t.Fatal(err)
			}
			for _, again := range []llm.Item{item(0), item(n - 1), last} {
				if err := m.Record(ctx, "th", again); err == nil {
					t.Errorf("item %s recorded twice", again.ID)
				}
			}
			answer := llm.ToolResult(llm.Result{CallID: "c1", Name: "ask", Content: "yes"})
			answer.ID = "pause"
			if err := m.Record(ctx, "th", answer); err != nil {
				t.Fatalf("the answer: %v", err)
			}
			snap, err := m.LoadThread(ctx, "th")
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Items) != n+2 {
				t.Fatalf("%d items, want %d", len(snap.Items), n+2)
			}
			if got := snap.Items[n]; got.ID != "pause" || got.Result().Content != "yes" {
				t.Errorf("item %d is %+v, want the answer in the placeholder's place", n, got)
			}
		})
	}
}

// joinedTitle is memTitle as it was before its fast path.
func joinedTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return strings.TrimSpace(string(r[:79])) + "…"
	}
	return s
}

func TestMemTitleIsTheMessageOnOneLine(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, s := range []string{
		"go", "what is the weather", " lead", "trail ", "two  spaces", "tab\there", "new\nline",
		"non\u00a0breaking", "é accent", long, strings.TrimSpace(long), strings.Repeat("é", 90), "",
		strings.Repeat("x", 80), strings.Repeat("x", 81),
	} {
		if got, want := memTitle(s), joinedTitle(s); got != want {
			t.Errorf("memTitle(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzMemTitle(f *testing.F) {
	f.Add("what is  the\tweather ")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := memTitle(s), joinedTitle(s); got != want {
			t.Fatalf("memTitle(%q) = %q, want %q", s, got, want)
		}
	})
}
