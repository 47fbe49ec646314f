package trace_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/trace"
)

func TestTurnsRebuildTheTurn(t *testing.T) {
	turns := trace.Turns(sampleEvents())
	if len(turns) != 1 {
		t.Fatalf("%d turns", len(turns))
	}
	tr := turns[0]
	if !tr.Done || tr.Status != "completed" || tr.StopReason != "forced_budget" || tr.Resumed {
		t.Errorf("turn %+v", tr)
	}
	if tr.Prompt != "Summarise <b>a.txt</b> & b.txt" {
		t.Errorf("prompt %q", tr.Prompt)
	}
	if got := tr.End.Sub(tr.Start); got != 3002*time.Millisecond {
		t.Errorf("turn lasts %v", got)
	}
	if len(tr.Rounds) != 4 {
		t.Fatalf("%d rounds", len(tr.Rounds))
	}
	tests := []struct {
		n        int
		phase    llm.Phase
		calls    int
		in, out  int64
		retries  int
		modelEnd int // ms
		text     string
	}{
		{1, llm.PhaseExplore, 2, 1200, 80, 1, 450, "Reading both files."},
		{2, llm.PhaseExplore, 3, 1400, 70, 0, 911, ""},
		{3, llm.PhaseSettle, 0, 1500, 40, 0, 2700, ""},
		{4, llm.PhaseFinal, 0, 1600, 70, 0, 3000, "a.txt says alpha; b.txt says beta. <script>alert(1)</script>"},
	}
	for i, w := range tests {
		r := tr.Rounds[i]
		if r.N != w.n || r.Phase != w.phase || len(r.Calls) != w.calls || len(r.Retries) != w.retries || r.Text != w.text {
			t.Errorf("round %d: n %d phase %s calls %d retries %d text %q", i+1, r.N, r.Phase, len(r.Calls), len(r.Retries), r.Text)
		}
		// Usage events are cumulative; a round shows its own share.
		if r.Usage.InputTokens != w.in || r.Usage.OutputTokens != w.out {
			t.Errorf("round %d: usage %+v, want %d/%d", r.N, r.Usage, w.in, w.out)
		}
		if !r.ModelEnd.Equal(t0.Add(time.Duration(w.modelEnd) * time.Millisecond)) {
			t.Errorf("round %d: model call ends %v", r.N, r.ModelEnd.Sub(t0))
		}
		if r.Failed() {
			t.Errorf("round %d failed", r.N)
		}
	}
	c1, c2 := tr.Rounds[0].Calls[0], tr.Rounds[0].Calls[1]
	if !(c1.Start.Before(c2.End) && c2.Start.Before(c1.End)) {
		t.Errorf("the parallel calls do not overlap")
	}
	if c1.Args != `{"path":"a.txt"}` || c1.Result != "alpha" || c1.Status != "ok" {
		t.Errorf("call c1 %+v", c1)
	}
	refused := tr.Rounds[1].Calls[1]
	if refused.Ran() || refused.Status != "not_run" {
		t.Errorf("refused call %+v", refused)
	}
	// The approved call ran after the wait began, and counts as run.
	if exec := tr.Rounds[1].Calls[2]; !exec.Ran() || exec.Status != "ok" || exec.End.Sub(exec.Start) != 47*time.Millisecond {
		t.Errorf("approved call %+v", exec)
	}
	if len(tr.Waits) != 1 || tr.Waits[0].End.Sub(tr.Waits[0].Start) != 1548*time.Millisecond || tr.Waits[0].Answer != "approve" || tr.Waits[0].Open {
		t.Errorf("waits %+v", tr.Waits)
	}
	var codes []string
	for _, w := range tr.Warnings {
		codes = append(codes, w.Code)
	}
	if strings.Join(codes, " ") != "settlement forced" {
		t.Errorf("turn warnings %v", codes)
	}
}

func TestTurnsCloseWhatTheEventsLeaveOpen(t *testing.T) {
	tests := []struct {
		name   string
		events []event.Event
		check  func(t *testing.T, tr *trace.Turn)
	}{
		{
			name: "a turn that ends paused leaves its wait open",
			events: []event.Event{
				at(0, event.Event{Type: event.TurnStarted}),
				at(1, event.Event{Type: event.PauseRequested, CallID: "q", Name: "ask_user", Pause: nil}),
				at(5, event.Event{Type: event.TurnCompleted, Status: "paused", Code: "awaiting_user"}),
			},
			check: func(t *testing.T, tr *trace.Turn) {
				if len(tr.Waits) != 1 || !tr.Waits[0].Open || !tr.Waits[0].End.Equal(t0.Add(5*time.Millisecond)) {
					t.Errorf("waits %+v", tr.Waits)
				}
			},
		},
		{
			name: "a stream that never opened is a failed round ending at the next event",
			events: []event.Event{
				at(0, event.Event{Type: event.TurnStarted}),
				at(1, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
				at(9, event.Event{Type: event.TurnCompleted, Status: "failed", Code: "provider_error", Turn: &event.TurnSummary{Error: "401"}}),
			},
			check: func(t *testing.T, tr *trace.Turn) {
				r := tr.Rounds[0]
				if !r.Failed() || !r.End.Equal(t0.Add(9*time.Millisecond)) || tr.Error != "401" {
					t.Errorf("round %+v, error %q", r, tr.Error)
				}
			},
		},
		{
			name: "events that stop mid-turn leave an incomplete turn with its tools closed",
			events: []event.Event{
				at(0, event.Event{Type: event.TurnStarted}),
				at(1, event.Event{Type: event.RoundStarted, Round: 1}),
				at(2, event.Event{Type: event.ToolStarted, Round: 1, CallID: "c", Name: "sleep"}),
				at(7, event.Event{Type: event.TextDelta, Round: 1, Delta: "x"}),
			},
			check: func(t *testing.T, tr *trace.Turn) {
				c := tr.Rounds[0].Calls[0]
				if tr.Done || !c.End.Equal(t0.Add(7*time.Millisecond)) {
					t.Errorf("done %v, call ends %v", tr.Done, c.End)
				}
			},
		},
		{
			name: "a resumed turn starts with the answer to its pause",
			events: []event.Event{
				at(0, event.Event{Type: event.PauseResolved, CallID: "q", Name: "ask_user", Content: "blue"}),
				at(3, event.Event{Type: event.TurnCompleted, Status: "completed", Code: "finished"}),
			},
			check: func(t *testing.T, tr *trace.Turn) {
				if !tr.Resumed || len(tr.Waits) != 1 || tr.Waits[0].Answer != "blue" {
					t.Errorf("resumed %v waits %+v", tr.Resumed, tr.Waits)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turns := trace.Turns(tt.events)
			if len(turns) != 1 {
				t.Fatalf("%d turns", len(turns))
			}
			tt.check(t, turns[0])
		})
	}
}

func TestTurnsSeparateInterleavedTurns(t *testing.T) {
	a := at(0, event.Event{Type: event.TurnStarted})
	b := at(1, event.Event{Type: event.TurnStarted})
	b.TurnID = "turn_2"
	c := at(2, event.Event{Type: event.TurnCompleted, Status: "completed"})
	turns := trace.Turns([]event.Event{a, b, c})
	if len(turns) != 2 || turns[0].ID != "turn_1" || turns[1].ID != "turn_2" || !turns[0].Done || turns[1].Done {
		t.Errorf("turns %+v %+v", turns[0], turns[1])
	}
}

func TestReadSkipsTheOutcomeLineAndReportsBadLines(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range sampleEvents() {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString(`{"type":"outcome","status":"completed","answer":"x"}` + "\n")
	got, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sampleEvents()) {
		t.Errorf("read %d events, want %d", len(got), len(sampleEvents()))
	}
	if tr := trace.Turns(got)[0]; tr.Rounds[3].Usage.OutputTokens != 70 || !tr.Rounds[0].Start.Equal(t0.Add(2*time.Millisecond)) {
		t.Errorf("round trip lost data: %+v", tr.Rounds[3])
	}
	if _, err := trace.Read(strings.NewReader(`{"type":"turn_started"}` + "\n{not json\n")); err == nil || !strings.Contains(err.Error(), "event 2") {
		t.Errorf("bad line: err %v", err)
	}
}
