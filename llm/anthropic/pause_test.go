package anthropic

import (
	"context"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// TestPausedTurnIsContinued: a response that stops with pause_turn (a
// server tool loop paused) is sent back as-is, as the last message of the
// same request, and the stream goes on with the continuation: one round,
// the texts in order, the usage summed. A turn that keeps pausing ends
// after maxPauseTurns continuations with what it has.
func TestPausedTurnIsContinued(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m, srv := newMock(t, mode.noSSE, Options{},
				testkit.AnthropicRound{Round: testkit.Round{Text: "Searching.", Finish: "pause_turn", InputTokens: 10, OutputTokens: 3}},
				testkit.AnthropicRound{Round: testkit.Round{Text: " Found it.", InputTokens: 20, OutputTokens: 4}},
			)
			req := &llm.Request{Items: []llm.Item{llm.UserText("search the web")}}
			s, err := m.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := llm.Collect(s)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, p := range resp.Parts {
				if p.Kind == llm.PartText {
					got += p.Text
				}
			}
			if got != "Searching. Found it." {
				t.Errorf("text %q, want both parts in order", got)
			}
			if resp.Finish != llm.FinishStop || resp.Usage.InputTokens != 30 || resp.Usage.OutputTokens != 7 {
				t.Errorf("finish %s usage %+v, want stop and the sum", resp.Finish, resp.Usage)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want the round and its continuation", len(reqs))
			}
			items := reqs[1].Items
			if last := items[len(items)-1]; last.Role != llm.RoleAssistant || last.Text() != "Searching." {
				t.Errorf("the continuation ends with %s %q, want the paused response as-is", last.Role, last.Text())
			}
			if len(req.Items) != 1 {
				t.Errorf("the caller's request was changed: %d items", len(req.Items))
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		rounds := make([]testkit.AnthropicRound, maxPauseTurns+2)
		for i := range rounds {
			rounds[i] = testkit.AnthropicRound{Round: testkit.Round{Text: "more.", Finish: "pause_turn"}}
		}
		m, srv := newMock(t, false, Options{}, rounds...)
		s, err := m.Stream(context.Background(), &llm.Request{Items: []llm.Item{llm.UserText("search")}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != maxPauseTurns+1 || resp.RawFinish != pauseTurn {
			t.Errorf("%d requests, finish %q; want %d and the last pause reported", n, resp.RawFinish, maxPauseTurns+1)
		}
	})
}
