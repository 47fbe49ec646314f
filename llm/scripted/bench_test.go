package scripted

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

// BenchmarkRound measures one round served and read to its end: Stream,
// every Recv, Close. The engine's budget is 5 µs per round, model included.
func BenchmarkRound(b *testing.B) {
	history := []llm.Item{llm.UserText("What is in this directory?")}
	for i := range 4 {
		id := "c" + string(rune('a'+i))
		history = append(history,
			llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "list_dir", Args: `{}`}}}},
			llm.ToolResult(llm.Result{CallID: id, Name: "list_dir", Content: "a.go b.go"}))
	}
	tools := []llm.ToolSpec{{Name: "list_dir"}, {Name: "read_file"}}
	calls := []Call{
		{Name: "list_dir", Args: map[string]any{"path": "."}},
		{Name: "read_file", RawArgs: `{"path":"main.go"}`},
	}
	tests := []struct {
		name  string
		round Round
		opts  []Option
	}{
		{"text", Round{Text: "The answer is 42."}, []Option{NoHistoryCheck()}},
		{"text and two calls", Round{Thinking: "Look first.", Text: "Looking.", Calls: calls}, []Option{NoHistoryCheck()}},
		{"chunked 200 bytes by 16", Round{Text: strings.Repeat("word ", 40), Chunk: 16}, []Option{NoHistoryCheck()}},
		{"expectations and history check", Round{Text: "Done.", Expect: []Expect{
			{Result: &ResultExpect{Call: "ca", Contains: "a.go"}},
			{ToolsInclude: []string{"read_file"}},
			{Phase: llm.PhaseExplore},
		}}, nil},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			r := tt.round
			r.Repeat = maxRepeat
			m := New(Script{Rounds: []Round{r}}, tt.opts...)
			req := &llm.Request{Items: history, Tools: tools, Phase: llm.PhaseExplore}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s, err := m.Stream(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					ev, err := s.Recv()
					if err != nil {
						b.Fatal(err)
					}
					if ev.Kind == llm.EventDone {
						break
					}
				}
				s.Close()
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(`rounds:
  - thinking: Look first.
    text: Looking.
    calls:
      - {id: c1, name: list_dir, args: {path: ., depth: 2}}
    expect:
      - last_user: directory
  - text: Done.
    expect:
      - result: {call: c1, contains: a.go}
`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseScript(data); err != nil {
			b.Fatal(err)
		}
	}
}
