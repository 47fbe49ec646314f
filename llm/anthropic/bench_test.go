package anthropic

import (
	"context"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// BenchmarkStreamedRound measures one streamed round over HTTP against the
// mock server: preamble text and a call, read to the done event.
func BenchmarkStreamedRound(b *testing.B) {
	round := testkit.AnthropicRound{Round: testkit.Round{
		Text:  "Let me look that up for you.",
		Calls: []testkit.MockCall{{Name: "weather", Args: `{"location":"Florence, Italy"}`}},
	}}
	srv := testkit.NewAnthropicServer(b)
	srv.ChunkSize = 16
	for range b.N {
		srv.Push(round)
	}
	m, err := New(Options{BaseURL: srv.BaseURL(), APIKey: "k", Model: "claude-sonnet-4-5"})
	if err != nil {
		b.Fatal(err)
	}
	req := &llm.Request{Items: []llm.Item{llm.UserText("Weather in Florence?")}, Tools: weatherTools}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := m.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := llm.Collect(s); err != nil {
			b.Fatal(err)
		}
	}
}
