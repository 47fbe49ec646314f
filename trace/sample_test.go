package trace_test

import (
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// at returns an event of turn_1 at t0 + ms.
func at(ms int, e event.Event) event.Event {
	e.Time = t0.Add(time.Duration(ms) * time.Millisecond)
	e.ThreadID, e.TurnID = "thread_1", "turn_1"
	return e
}

func cum(in, out int64) *llm.Usage { return &llm.Usage{InputTokens: in, OutputTokens: out} }

func assistant() *llm.Item { return &llm.Item{Role: llm.RoleAssistant} }

// sampleEvents is a turn that has everything the page shows: the prompt, a
// retried model call, two parallel reads, an approval wait, a failed and a
// refused call, settlement, a forced final round, and an answer with markup
// in it that must stay text.
func sampleEvents() []event.Event {
	return []event.Event{
		at(0, event.Event{Type: event.TurnStarted}),
		at(1, event.Event{Type: event.ItemAdded, Item: &llm.Item{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "Summarise <b>a.txt</b> & b.txt"}}}}),
		// Round 1: a retry, then two reads in parallel.
		at(2, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
		at(3, event.Event{Type: event.Retry, Round: 1, Attempt: 1, Max: 3, Duration: 400, Content: "429 Too Many Requests"}),
		at(420, event.Event{Type: event.TextDelta, Round: 1, Delta: "Reading both files."}),
		at(430, event.Event{Type: event.CallCompleted, Round: 1, Index: 0, CallID: "c1", Name: "read_file", Args: `{"path":"a.txt"}`}),
		at(431, event.Event{Type: event.ToolStarted, Round: 1, Index: 0, CallID: "c1", Name: "read_file"}),
		at(440, event.Event{Type: event.CallCompleted, Round: 1, Index: 1, CallID: "c2", Name: "read_file", Args: `{"path":"b.txt"}`}),
		at(441, event.Event{Type: event.ToolStarted, Round: 1, Index: 1, CallID: "c2", Name: "read_file"}),
		at(450, event.Event{Type: event.ItemAdded, Round: 1, Item: assistant()}),
		at(631, event.Event{Type: event.Result, Round: 1, Index: 0, CallID: "c1", Name: "read_file", Status: "ok", Content: "alpha", Duration: 200}),
		at(691, event.Event{Type: event.Result, Round: 1, Index: 1, CallID: "c2", Name: "read_file", Status: "ok", Content: "beta", Duration: 250}),
		at(692, event.Event{Type: event.RoundCompleted, Round: 1, Phase: llm.PhaseExplore, Role: event.RoleNarration, Code: "tool_calls"}),
		at(692, event.Event{Type: event.Usage, Round: 1, Usage: cum(1200, 80), Cost: 0.0021}),
		// Round 2: exec waits for approval; grep fails; a write is refused.
		at(700, event.Event{Type: event.RoundStarted, Round: 2, Phase: llm.PhaseExplore}),
		at(900, event.Event{Type: event.CallCompleted, Round: 2, Index: 0, CallID: "c3", Name: "grep", Args: `{"pattern":"("}`}),
		at(901, event.Event{Type: event.ToolStarted, Round: 2, Index: 0, CallID: "c3", Name: "grep"}),
		at(905, event.Event{Type: event.CallCompleted, Round: 2, Index: 1, CallID: "c4", Name: "write_file", Args: `{"path":"x"}`}),
		at(910, event.Event{Type: event.CallCompleted, Round: 2, Index: 2, CallID: "c5", Name: "exec", Args: `{"cmd":"make"}`}),
		at(911, event.Event{Type: event.ItemAdded, Round: 2, Item: assistant()}),
		at(912, event.Event{Type: event.Result, Round: 2, Index: 1, CallID: "c4", Name: "write_file", Status: "not_run", Content: "refused: read-only turn"}),
		at(930, event.Event{Type: event.Result, Round: 2, Index: 0, CallID: "c3", Name: "grep", Status: "error", Content: "grep failed: missing )", Duration: 29}),
		at(931, event.Event{Type: event.Result, Round: 2, Index: 2, CallID: "c5", Name: "exec", Status: "pending", Content: "[awaiting approval]"}),
		at(932, event.Event{Type: event.RoundCompleted, Round: 2, Phase: llm.PhaseExplore, Role: event.RoleNarration, Code: "tool_calls"}),
		at(932, event.Event{Type: event.Usage, Round: 2, Usage: cum(2600, 150), Cost: 0.0045}),
		at(933, event.Event{Type: event.PauseRequested, CallID: "c5", Name: "exec", Args: `{"cmd":"make"}`, Pause: &tool.Pause{Kind: tool.PauseApproval}}),
		// Approved: the call runs, then the pause is resolved.
		at(2433, event.Event{Type: event.ToolStarted, Round: 2, CallID: "c5", Name: "exec"}),
		at(2480, event.Event{Type: event.Result, Round: 2, CallID: "c5", Name: "exec", Status: "ok", Content: "build ok", Duration: 47}),
		at(2481, event.Event{Type: event.PauseResolved, CallID: "c5", Name: "exec", Status: "approve", Content: "build ok"}),
		// Settlement, then the forced final round.
		at(2482, event.Event{Type: event.Warning, Round: 2, Code: event.WarnSettlement, Content: "exploration budget spent; settling"}),
		at(2490, event.Event{Type: event.RoundStarted, Round: 3, Phase: llm.PhaseSettle}),
		at(2700, event.Event{Type: event.ItemAdded, Round: 3, Item: assistant()}),
		at(2701, event.Event{Type: event.RoundCompleted, Round: 3, Phase: llm.PhaseSettle, Role: event.RoleNarration, Code: "tool_calls"}),
		at(2701, event.Event{Type: event.Usage, Round: 3, Usage: cum(4100, 190), Cost: 0.007}),
		at(2702, event.Event{Type: event.Warning, Round: 3, Code: event.WarnForced, Content: "answering now with what has been gathered (forced_budget)"}),
		at(2710, event.Event{Type: event.RoundStarted, Round: 4, Phase: llm.PhaseFinal}),
		at(2800, event.Event{Type: event.TextDelta, Round: 4, Delta: "a.txt says alpha; "}),
		at(2900, event.Event{Type: event.TextDelta, Round: 4, Delta: "b.txt says beta. <script>alert(1)</script>"}),
		at(3000, event.Event{Type: event.ItemAdded, Round: 4, Item: assistant()}),
		at(3001, event.Event{Type: event.RoundCompleted, Round: 4, Phase: llm.PhaseFinal, Role: event.RoleFinish, Code: "stop"}),
		at(3001, event.Event{Type: event.Usage, Round: 4, Usage: cum(5700, 260), Cost: 0.0098}),
		at(3002, event.Event{Type: event.TurnCompleted, Status: "completed", Code: "forced_budget", Turn: &event.TurnSummary{
			Status: "completed", StopReason: "forced_budget", Answer: "a.txt says alpha; b.txt says beta. <script>alert(1)</script>",
			Rounds: 4, SettlementRounds: 1, ToolSteps: 3, Usage: *cum(5700, 260), Cost: 0.0098}}),
	}
}
