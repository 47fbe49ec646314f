package window

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

// thread returns a history of n rounds: a user message, then assistant
// items with a call (and reasoning) and their results.
func thread(n int) []llm.Item {
	h := []llm.Item{llm.UserText("please look through the repository and summarize the build")}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartReasoning, Text: "I should read the next file to understand the build."},
				{Kind: llm.PartText, Text: "Reading the next file."},
				{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "read_file", Args: fmt.Sprintf(`{"path":"pkg/file_%d.go"}`, i)}},
			}},
			llm.ToolResult(llm.Result{CallID: id, Name: "read_file", Content: strings.Repeat(fmt.Sprintf("func f%d() { return nil }\n", i), 1+i%7), Status: llm.ResultOK}),
		)
	}
	return h
}

func newLedger(c Counter) ledger {
	return ledger{k: newCosts(c), classify: classify}
}

func TestLedgerIncrementalMatchesCold(t *testing.T) {
	h := thread(300)
	inc := newLedger(Encoding(O200k))
	// Rounds arrive two items at a time; one earlier result is replaced
	// (a pause answered) on the way.
	for n := 1; n <= len(h); n += 2 {
		var edited []int
		if n == 201 {
			h[100] = llm.ToolResult(llm.Result{CallID: h[100].Result().CallID, Name: "read_file", Content: "replaced by the user's answer"})
			edited = []int{100}
		}
		// The first 150 items arrive as the request's History, the rest
		// as its Items: counted as one history.
		split := min(n, 150)
		inc.sync(&llm.Request{History: h[:split], Items: h[split:n]}, edited)
	}
	inc.sync(&llm.Request{History: h[:150], Items: h[150:]}, nil)
	cold := newLedger(Encoding(O200k))
	cold.sync(&llm.Request{Items: h}, nil)
	if inc.sums != cold.sums {
		t.Errorf("incremental sums %v, cold %v", inc.sums, cold.sums)
	}
	if inc.total() == 0 || inc.sums[ToolResults] == 0 || inc.sums[History] == 0 {
		t.Errorf("nothing counted: %v", inc.sums)
	}
}

func TestLedgerCountsEverythingSent(t *testing.T) {
	k := newCosts(Encoding(O200k))
	base := llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "ok"}}}
	tests := []struct {
		name string
		part llm.Part
	}{
		{"call arguments", llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: "c", Name: "write_file", Args: `{"path":"a.go","content":"package a\n\nfunc A() {}\n"}`}}},
		{"reasoning text", llm.Part{Kind: llm.PartReasoning, Text: "Let me think about which file to open first."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			with := base
			with.Parts = append([]llm.Part{tt.part}, base.Parts...)
			if k.item(&with) <= k.item(&base)+5 {
				t.Errorf("%s not counted: %d vs %d", tt.name, k.item(&with), k.item(&base))
			}
		})
	}
}

func TestLedgerStartsOverOnAShorterHistory(t *testing.T) {
	l := newLedger(Encoding(O200k))
	l.sync(&llm.Request{Items: thread(50)}, nil)
	short := thread(2)
	l.sync(&llm.Request{Items: short}, nil)
	cold := newLedger(Encoding(O200k))
	cold.sync(&llm.Request{Items: short}, nil)
	if l.sums != cold.sums {
		t.Errorf("after a compaction-like reset: %v, want %v", l.sums, cold.sums)
	}
}
