package telemetry_test

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns an event of turn_1 at t0 + ms.
func at(ms int, e event.Event) event.Event {
	e.Time = t0.Add(time.Duration(ms) * time.Millisecond)
	e.ThreadID, e.TurnID = "thread_1", "turn_1"
	return e
}

func usage(in, out int64) *llm.Usage { return &llm.Usage{InputTokens: in, OutputTokens: out} }

// round returns the events of a round that ends normally at ms+10.
func round(ms, n int, phase llm.Phase, role, finish string, u *llm.Usage) []event.Event {
	return []event.Event{
		at(ms, event.Event{Type: event.RoundStarted, Round: n, Phase: phase}),
		at(ms+5, event.Event{Type: event.ItemAdded, Round: n, Item: &llm.Item{Role: llm.RoleAssistant}}),
		at(ms+10, event.Event{Type: event.RoundCompleted, Round: n, Phase: phase, Role: role, Code: finish}),
		at(ms+10, event.Event{Type: event.Usage, Round: n, Usage: u}),
	}
}

func completed(ms int, status, reason, errText string) event.Event {
	return at(ms, event.Event{Type: event.TurnCompleted, Status: status, Code: reason, Turn: &event.TurnSummary{Status: record.Status(status), StopReason: record.StopReason(reason), Error: errText}})
}

func concat(parts ...[]event.Event) []event.Event {
	var out []event.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(e ...event.Event) []event.Event { return e }

// TestEventsBecomeSpans feeds event sequences of the shapes the engine
// sends and checks the span each one is about.
func TestEventsBecomeSpans(t *testing.T) {
	started := at(0, event.Event{Type: event.TurnStarted})
	tests := []struct {
		name   string
		events []event.Event
		check  func(t *testing.T, r *recorder)
	}{
		{
			name: "a failed tool and an aborted tool set error status; a refused call gets a span of no length",
			events: concat(one(started,
				at(1, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
				at(2, event.Event{Type: event.ToolStarted, Round: 1, CallID: "c1", Name: "grep"}),
				at(3, event.Event{Type: event.ToolStarted, Round: 1, CallID: "c2", Name: "exec"}),
				at(4, event.Event{Type: event.ItemAdded, Round: 1, Item: &llm.Item{Role: llm.RoleAssistant}}),
				at(5, event.Event{Type: event.Result, Round: 1, CallID: "c3", Name: "write_file", Status: "not_run", Content: "refused"}),
				at(9, event.Event{Type: event.Result, Round: 1, CallID: "c1", Name: "grep", Status: "error", Content: "grep failed: bad pattern\nmore", Duration: 7}),
				at(20, event.Event{Type: event.Result, Round: 1, CallID: "c2", Name: "exec", Status: "aborted", Content: "interrupted", Duration: 17}),
				at(21, event.Event{Type: event.RoundCompleted, Round: 1, Role: event.RoleNarration, Code: "tool_calls"}),
				at(21, event.Event{Type: event.Usage, Round: 1, Usage: usage(10, 1)}),
			), round(30, 2, llm.PhaseExplore, event.RoleFinish, "stop", usage(20, 2)), one(completed(41, "completed", "finished", ""))),
			check: func(t *testing.T, r *recorder) {
				grep := r.one(t, "execute_tool grep")
				if grep.Status().Code != codes.Error || grep.Status().Description != "grep failed: bad pattern" {
					t.Errorf("grep status %v %q", grep.Status().Code, grep.Status().Description)
				}
				if d := grep.EndTime().Sub(grep.StartTime()); d != 7*time.Millisecond {
					t.Errorf("grep span lasts %v, want 7ms", d)
				}
				exec := r.one(t, "execute_tool exec")
				if exec.Status().Code != codes.Error {
					t.Errorf("aborted tool status %v", exec.Status().Code)
				}
				wantAttrs(t, exec, map[string]any{"error.type": "aborted", "rein.tool.status": "aborted"})
				refused := r.one(t, "execute_tool write_file")
				if refused.StartTime() != refused.EndTime() || refused.Status().Code == codes.Error {
					t.Errorf("refused call: %v–%v, status %v", refused.StartTime(), refused.EndTime(), refused.Status().Code)
				}
				wantAttrs(t, refused, map[string]any{"rein.tool.status": "not_run", "gen_ai.tool.call.id": "c3"})
			},
		},
		{
			name: "a retry is an event on the model call span",
			events: concat(one(started,
				at(1, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
				at(2, event.Event{Type: event.Retry, Round: 1, Attempt: 1, Max: 3, Duration: 500, Content: "429 rate limited"}),
				at(600, event.Event{Type: event.ItemAdded, Round: 1, Item: &llm.Item{Role: llm.RoleAssistant}}),
				at(601, event.Event{Type: event.RoundCompleted, Round: 1, Role: event.RoleFinish, Code: "stop"}),
				at(601, event.Event{Type: event.Usage, Round: 1, Usage: usage(1, 1)}),
			), one(completed(602, "completed", "finished", ""))),
			check: func(t *testing.T, r *recorder) {
				chat := r.one(t, "chat gpt-test")
				ev := chat.Events()
				if len(ev) != 1 || ev[0].Name != "retry" || !ev[0].Time.Equal(t0.Add(2*time.Millisecond)) {
					t.Fatalf("chat events %+v, want one retry at +2ms", ev)
				}
				if d := chat.EndTime().Sub(chat.StartTime()); d != 599*time.Millisecond {
					t.Errorf("chat lasts %v, want 599ms (until the assistant item)", d)
				}
			},
		},
		{
			name: "settlement and forced rounds carry their phase; warnings are events of the turn or the round",
			events: concat(one(started),
				round(0, 1, llm.PhaseExplore, event.RoleNarration, "tool_calls", usage(1, 1)),
				one(at(20, event.Event{Type: event.Warning, Round: 1, Code: event.WarnSettlement, Content: "settling"})),
				round(30, 2, llm.PhaseSettle, event.RoleNarration, "tool_calls", usage(2, 2)),
				one(at(45, event.Event{Type: event.Warning, Round: 2, Code: event.WarnForced, Content: "answering now"})),
				round(50, 3, llm.PhaseFinal, event.RoleFinish, "stop", usage(3, 3)),
				one(completed(70, "completed", "forced_budget", ""))),
			check: func(t *testing.T, r *recorder) {
				phases := map[int64]string{}
				for _, s := range r.named("round") {
					n, _ := attr(s, "rein.round")
					p, _ := attr(s, "rein.round.phase")
					phases[n.AsInt64()] = p.AsString()
				}
				if phases[1] != "explore" || phases[2] != "settle" || phases[3] != "final" {
					t.Errorf("phases %v", phases)
				}
				turn := r.one(t, "invoke_agent rein")
				var codes []string
				for _, e := range turn.Events() {
					v, _ := eventAttr(e, "rein.warning.code")
					codes = append(codes, e.Name+":"+v)
				}
				if strings.Join(codes, " ") != "warning:settlement warning:forced" {
					t.Errorf("turn events %v", codes)
				}
				wantAttrs(t, turn, map[string]any{"rein.turn.stop_reason": "forced_budget"})
			},
		},
		{
			name: "a model call that fails is an error span, with the reason from the warning that follows",
			events: concat(one(started), round(0, 1, llm.PhaseExplore, event.RoleNarration, "tool_calls", usage(5, 5)), one(
				at(20, event.Event{Type: event.RoundStarted, Round: 2, Phase: llm.PhaseExplore}),
				at(30, event.Event{Type: event.RoundCompleted, Round: 2, Role: event.RoleFinish}),
				at(30, event.Event{Type: event.Usage, Round: 2, Usage: usage(5, 5)}),
				at(31, event.Event{Type: event.Warning, Round: 1, Code: event.WarnForced, Content: "a model call failed: 503 overloaded"}),
			), round(40, 2, llm.PhaseFinal, event.RoleFinish, "stop", usage(6, 6)), one(completed(60, "completed", "forced_error", ""))),
			check: func(t *testing.T, r *recorder) {
				var failed []sdktrace.ReadOnlySpan
				for _, s := range r.named("chat gpt-test") {
					if s.Status().Code == codes.Error {
						failed = append(failed, s)
					}
				}
				if len(failed) != 1 || failed[0].Status().Description != "a model call failed: 503 overloaded" {
					t.Fatalf("failed chats %v", failed)
				}
				wantAttrs(t, failed[0], map[string]any{"error.type": "no_response"})
				if _, ok := attr(failed[0], "gen_ai.response.finish_reasons"); ok {
					t.Errorf("a failed call has finish reasons")
				}
			},
		},
		{
			name: "a round whose stream never opened ends at the turn's failure",
			events: one(started,
				at(1, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
				completed(40, "failed", "provider_error", "401 unauthorized: check the key\ndetail")),
			check: func(t *testing.T, r *recorder) {
				chat := r.one(t, "chat gpt-test")
				if chat.Status().Code != codes.Error || !chat.EndTime().Equal(t0.Add(40*time.Millisecond)) {
					t.Errorf("chat %v ends %v", chat.Status(), chat.EndTime())
				}
				turn := r.one(t, "invoke_agent rein")
				if turn.Status().Code != codes.Error || turn.Status().Description != "401 unauthorized: check the key" {
					t.Errorf("turn status %v", turn.Status())
				}
				wantAttrs(t, turn, map[string]any{"rein.turn.status": "failed", "error.type": "provider_error"})
			},
		},
		{
			name: "a wait on the user is a span under the turn, answered or left open",
			events: concat(one(started), round(0, 1, llm.PhaseExplore, event.RoleNarration, "tool_calls", usage(1, 1)), one(
				at(15, event.Event{Type: event.PauseRequested, CallID: "a1", Name: "exec", Pause: &tool.Pause{Kind: tool.PauseApproval}}),
				at(2015, event.Event{Type: event.PauseResolved, CallID: "a1", Name: "exec", Status: "approve"}),
				at(2016, event.Event{Type: event.PauseRequested, CallID: "q1", Name: "ask_user", Pause: &tool.Pause{Kind: tool.PauseAskUser}}),
				completed(2017, "paused", "awaiting_user", ""))),
			check: func(t *testing.T, r *recorder) {
				waits := r.named("await_user")
				if len(waits) != 2 {
					t.Fatalf("%d waits", len(waits))
				}
				turn := r.one(t, "invoke_agent rein")
				for _, w := range waits {
					if w.Parent().SpanID() != turn.SpanContext().SpanID() {
						t.Errorf("wait not under the turn")
					}
					switch attrOr(w, "gen_ai.tool.call.id") {
					case "a1":
						wantAttrs(t, w, map[string]any{"rein.pause.kind": "approval", "rein.pause.decision": "approve"})
						if d := w.EndTime().Sub(w.StartTime()); d != 2*time.Second {
							t.Errorf("approval wait %v, want 2s", d)
						}
					case "q1":
						wantAttrs(t, w, map[string]any{"rein.pause.kind": "ask_user", "rein.pause.unanswered": true})
					}
				}
				wantAttrs(t, turn, map[string]any{"rein.turn.status": "paused"})
				if turn.Status().Code == codes.Error {
					t.Errorf("a paused turn is not an error")
				}
			},
		},
		{
			name: "an approved call runs after its round, under the turn, inside the wait",
			events: concat(one(started), one(
				at(1, event.Event{Type: event.RoundStarted, Round: 1, Phase: llm.PhaseExplore}),
				at(5, event.Event{Type: event.ItemAdded, Round: 1, Item: &llm.Item{Role: llm.RoleAssistant}}),
				at(6, event.Event{Type: event.Result, Round: 1, CallID: "x1", Name: "exec", Status: "pending"}),
				at(7, event.Event{Type: event.RoundCompleted, Round: 1, Role: event.RoleNarration, Code: "tool_calls"}),
				at(7, event.Event{Type: event.Usage, Round: 1, Usage: usage(1, 1)}),
				at(8, event.Event{Type: event.PauseRequested, CallID: "x1", Name: "exec", Pause: &tool.Pause{Kind: tool.PauseApproval}}),
				at(900, event.Event{Type: event.ToolStarted, Round: 1, CallID: "x1", Name: "exec"}),
				at(950, event.Event{Type: event.Result, Round: 1, CallID: "x1", Name: "exec", Status: "ok", Duration: 50}),
				at(951, event.Event{Type: event.PauseResolved, CallID: "x1", Name: "exec", Status: "approve"}),
			), round(960, 2, llm.PhaseExplore, event.RoleFinish, "stop", usage(2, 2)), one(completed(980, "completed", "finished", ""))),
			check: func(t *testing.T, r *recorder) {
				turn := r.one(t, "invoke_agent rein")
				var ran sdktrace.ReadOnlySpan
				for _, s := range r.named("execute_tool exec") {
					if attrOr(s, "rein.tool.status") == "ok" {
						ran = s
					}
				}
				if ran == nil {
					t.Fatal("no span of the approved run")
				}
				if ran.Parent().SpanID() != turn.SpanContext().SpanID() || ran.EndTime().Sub(ran.StartTime()) != 50*time.Millisecond {
					t.Errorf("approved run: parent %v, %v long", ran.Parent().SpanID(), ran.EndTime().Sub(ran.StartTime()))
				}
				wantAttrs(t, ran, map[string]any{"rein.round": 1, "gen_ai.tool.call.id": "x1"})
			},
		},
		{
			name: "a resumed turn starts its span on its first event",
			events: concat(one(
				at(0, event.Event{Type: event.PauseResolved, CallID: "q1", Name: "ask_user"}),
			), round(1, 2, llm.PhaseExplore, event.RoleFinish, "stop", usage(9, 9)), one(completed(20, "completed", "finished", ""))),
			check: func(t *testing.T, r *recorder) {
				turn := r.one(t, "invoke_agent rein")
				wantAttrs(t, turn, map[string]any{"rein.turn.resumed": true})
				if !turn.StartTime().Equal(t0) {
					t.Errorf("resumed turn starts %v", turn.StartTime())
				}
				wantAttrs(t, r.one(t, "chat gpt-test"), map[string]any{"gen_ai.usage.input_tokens": 9})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder(t)
			for _, e := range tt.events {
				r.h.Handle(e)
			}
			if n := len(r.spans.Started()) - len(r.spans.Ended()); n != 0 {
				t.Errorf("%d spans left open", n)
			}
			tt.check(t, r)
		})
	}
}

func eventAttr(e sdktrace.Event, key string) (string, bool) {
	for _, kv := range e.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}
