package llm

import (
	"fmt"
	"testing"
)

// TestRequestItemsReadHistoryThenItems: Len, At, All and Joined see the
// items History then Items hold, in that order, wherever the split falls;
// CheckRequest finds what CheckHistory finds in the joined items (a result
// in Items answering a call in History, a duplicate id across the two).
func TestRequestItemsReadHistoryThenItems(t *testing.T) {
	call := func(id string) Item {
		return Item{Role: RoleAssistant, Parts: []Part{{Kind: PartCall, Call: &Call{ID: id, Name: "f"}}}}
	}
	result := func(id string) Item { return ToolResult(Result{CallID: id, Name: "f", Content: "ok"}) }
	histories := map[string][]Item{
		"valid":        {UserText("a"), call("c1"), result("c1"), UserText("b"), call("c2"), result("c2")},
		"duplicate id": {UserText("a"), call("c1"), result("c1"), call("c1"), result("c1")},
		"open call":    {UserText("a"), call("c1"), UserText("b"), call("c2"), result("c2")},
	}
	for name, items := range histories {
		want := CheckHistory(items)
		for k := 0; k <= len(items); k++ {
			t.Run(fmt.Sprintf("%s/split at %d", name, k), func(t *testing.T) {
				req := &Request{History: items[:k:k], Items: items[k:]}
				if req.Len() != len(items) {
					t.Fatalf("Len %d, want %d", req.Len(), len(items))
				}
				n := 0
				for i, it := range req.All() {
					if i != n || it != &items[i] || req.At(i) != &items[i] {
						t.Fatalf("item %d (the %d-th seen) is not the caller's item %d", i, n, i)
					}
					n++
				}
				if n != len(items) {
					t.Fatalf("All saw %d items, want %d", n, len(items))
				}
				j := req.Joined()
				if len(j) != len(items) || (k == 0 && len(items) > 0 && &j[0] != &items[0]) {
					t.Fatalf("Joined has %d items (want %d), or copied an unsplit request", len(j), len(items))
				}
				got := CheckRequest(req)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("CheckRequest: %v\nCheckHistory of the whole: %v", got, want)
				}
			})
		}
	}
}

// TestAllStopsWhenTheLoopDoes: a range over All that breaks early, in
// History or in Items, ends the iteration there.
func TestAllStopsWhenTheLoopDoes(t *testing.T) {
	req := &Request{History: []Item{UserText("a"), UserText("b")}, Items: []Item{UserText("c"), UserText("d")}}
	for stop := range req.Len() {
		seen := 0
		for i := range req.All() {
			seen++
			if i == stop {
				break
			}
		}
		if seen != stop+1 {
			t.Errorf("break at %d: saw %d items", stop, seen)
		}
	}
}
