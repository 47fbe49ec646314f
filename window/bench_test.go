package window

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

// workThread returns a thread of n items that looks like work: a user
// message, then rounds of an assistant item (reasoning, a call) and a
// result of about 600 tokens of code.
func workThread(n int) []llm.Item {
	h := []llm.Item{llm.UserText("Find where the request retries are configured and explain the backoff.")}
	for i := 0; len(h) < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		var body strings.Builder
		for l := range 25 {
			fmt.Fprintf(&body, "func handler%d_%d(w http.ResponseWriter, r *http.Request) { retry(%d) }\n", i, l, l)
		}
		h = append(h,
			llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartReasoning, Text: fmt.Sprintf("The retry policy may be in file %d; read it.", i)},
				{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "read_file", Args: fmt.Sprintf(`{"path":"internal/http/handler_%d.go"}`, i)}},
			}},
			llm.ToolResult(llm.Result{CallID: id, Name: "read_file", Content: body.String(), Status: llm.ResultOK}),
		)
	}
	return h[:n]
}

// BenchmarkCount counts a 2,000-item thread: cold (a new Window: nothing
// cached, every text tokenized), warm (a new turn's guard on a Window that
// has seen the thread: long texts come from its cache) and incremental (a
// round adds an assistant item and a new result to a counted thread: only
// they are counted).
func BenchmarkCount(b *testing.B) {
	const n = 2000
	items := workThread(n + 2)
	cfg := Config{Model: "gpt-5", Window: 10_000_000}
	req := &llm.Request{Items: items[:n]}
	var tokens int
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, _ := New(cfg)
			_, tokens = w.newGuard().count(req, nil)
		}
		b.ReportMetric(float64(tokens), "tokens")
	})
	b.Run("warm", func(b *testing.B) {
		w, _ := New(cfg)
		w.newGuard().count(req, nil)
		b.ReportAllocs()
		for b.Loop() {
			w.newGuard().count(req, nil)
		}
	})
	b.Run("incremental", func(b *testing.B) {
		w, _ := New(cfg)
		g := w.newGuard()
		g.count(req, nil)
		next := &llm.Request{Items: append(items[:n:n], items[n], items[n+1])}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			b.StopTimer()
			// Forget the round, and give it a result never seen, so each
			// iteration counts a real round's two items.
			l := &g.led
			for j := n; j < len(l.tokens); j++ {
				l.sums[l.segs[j]] -= int(l.tokens[j])
			}
			l.tokens, l.segs = l.tokens[:n], l.segs[:n]
			i++
			for j := n; j < n+2; j++ {
				if res := items[j].Result(); res != nil {
					r := *res
					r.Content = fmt.Sprintf("%d\n%s", i, r.Content)
					next.Items[j] = llm.ToolResult(r)
				}
			}
			b.StartTimer()
			g.count(next, nil)
		}
	})
}
