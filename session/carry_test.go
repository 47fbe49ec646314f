package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// numberingModel numbers its calls per response, as some servers do: asked
// "ask" it calls ask_user, asked anything else it calls noop, both with the
// id "call_0"; given a result it answers. It checks the history invariants
// of every request and keeps what it was sent.
type numberingModel struct {
	mu    sync.Mutex
	reqs  [][]llm.Item
	first []*llm.Item
	bad   []string
}

func (m *numberingModel) Stream(_ context.Context, req *llm.Request) (llm.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := llm.CheckHistory(req.Items); err != nil {
		m.bad = append(m.bad, fmt.Sprintf("request %d: %v", len(m.reqs)+1, err))
	}
	m.reqs = append(m.reqs, slices.Clone(req.Items))
	m.first = append(m.first, &req.Items[0])
	last := req.Items[len(req.Items)-1]
	resp := &llm.Response{Parts: []llm.Part{{Kind: llm.PartText, Text: "done"}}, Finish: llm.FinishStop}
	if last.Role == llm.RoleUser {
		name := "noop"
		if last.Text() == "ask" {
			name = "ask_user"
		}
		c := &llm.Call{ID: "call_0", Name: name, Args: "{}"}
		resp = &llm.Response{Parts: []llm.Part{{Kind: llm.PartCall, Call: c}}, Finish: llm.FinishToolCalls}
	}
	return &respStream{resp: resp}, nil
}

// respStream streams a response: its calls as complete, then the response.
type respStream struct {
	resp *llm.Response
	i    int
}

func (s *respStream) Recv() (llm.Event, error) {
	parts := s.resp.Parts
	for s.i < len(parts) {
		p := parts[s.i]
		s.i++
		if p.Kind == llm.PartCall {
			return llm.Event{Kind: llm.EventCallDone, Call: p.Call}, nil
		}
		if p.Kind == llm.PartText {
			return llm.Event{Kind: llm.EventText, Delta: p.Text}, nil
		}
	}
	if s.i == len(parts) {
		s.i++
		return llm.Event{Kind: llm.EventDone, Response: s.resp}, nil
	}
	return llm.Event{}, io.EOF
}

func (s *respStream) Close() error { return nil }

// request returns the items of request i and the address of its first item.
func (m *numberingModel) request(i int) ([]llm.Item, *llm.Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[i], m.first[i]
}

func (m *numberingModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

func TestATurnGoesOnFromTheThreadsLastTurn(t *testing.T) {
	noop := &fakeTool{spec: tool.Spec{Name: "noop", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "ok"}, nil
	}}
	tests := []struct {
		name string
		// between is what happens to the thread's second turn, which asks
		// the user: "answer" or "interrupt".
		between string
		// carried: the third turn goes on in the second turn's array.
		carried bool
	}{
		{name: "the turn before ended", between: "", carried: true},
		{name: "the turn before paused and was answered", between: "answer", carried: true},
		// The scheduler writes the interrupted turn's last items itself:
		// the next turn starts from the thread's history.
		{name: "the turn before paused and was interrupted", between: "interrupt", carried: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &numberingModel{}
			store := session.NewMemStore()
			// A thread of 300 rounds (a short one's items are not carried),
			// whose calls reuse the ids call_0, call_1, …, read by the
			// scheduler from the store.
			th := session.Thread{ID: "thread_long"}
			if err := store.SaveThread(t.Context(), th); err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				id := fmt.Sprintf("call_%d", i)
				c := llm.Item{ID: fmt.Sprintf("t0.%d", 2*i), TurnID: "t0", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: "{}"}}}}
				r := llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: "ok", Status: llm.ResultOK})
				r.ID, r.TurnID = fmt.Sprintf("t0.%d", 2*i+1), "t0"
				if i == 0 {
					u := llm.UserText("start")
					u.ID, u.TurnID = "t0.start", "t0"
					if err := store.Record(t.Context(), th.ID, u); err != nil {
						t.Fatal(err)
					}
				}
				for _, it := range []llm.Item{c, r} {
					if err := store.Record(t.Context(), th.ID, it); err != nil {
						t.Fatal(err)
					}
				}
			}
			s, err := session.New(session.Config{Store: store, Setup: func(context.Context, session.Thread) (loop.Options, func(), error) {
				return loop.Options{Model: m, Tools: tool.NewSet(noop, askTool())}, nil, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := s.Close(ctx); err != nil {
					t.Error(err)
				}
			}()
			run := func(text string) session.Turn {
				t.Helper()
				tu, err := s.Start(t.Context(), th.ID, llm.UserText(text))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if tu, err = s.Wait(ctx, th.ID, tu.ID); err != nil {
					t.Fatal(err)
				}
				return tu
			}
			wait := func(id string) session.Turn {
				t.Helper()
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				tu, err := s.Wait(ctx, th.ID, id)
				if err != nil {
					t.Fatal(err)
				}
				return tu
			}
			stored := func() []llm.Item {
				t.Helper()
				snap, err := store.LoadThread(t.Context(), th.ID)
				if err != nil {
					t.Fatal(err)
				}
				return snap.Items
			}

			if tu := run("one"); tu.Status != session.TurnCompleted {
				t.Fatalf("turn one: %s", tu.Status)
			}
			second := "two"
			if tt.between != "" {
				second = "ask"
			}
			tu := run(second)
			switch tt.between {
			case "answer":
				if tu.Status != session.TurnPaused {
					t.Fatalf("turn two: %s, want paused", tu.Status)
				}
				if err := s.Answer(t.Context(), th.ID, loop.Answer{TurnID: tu.ID, CallID: tu.Pause.CallID, Text: "yes"}); err != nil {
					t.Fatal(err)
				}
				tu = wait(tu.ID)
			case "interrupt":
				if err := s.Interrupt(t.Context(), th.ID, tu.ID); err != nil {
					t.Fatal(err)
				}
				tu = wait(tu.ID)
			}
			if tu.Status != session.TurnCompleted && tu.Status != session.TurnInterrupted {
				t.Fatalf("turn two: %s", tu.Status)
			}
			lastOfTwo := m.count() - 1
			before := stored()
			if tu := run("three"); tu.Status != session.TurnCompleted {
				t.Fatalf("turn three: %s", tu.Status)
			}
			m.mu.Lock()
			for _, b := range m.bad {
				t.Error(b)
			}
			m.mu.Unlock()
			if err := llm.CheckHistory(stored()); err != nil {
				t.Errorf("the stored thread breaks the history invariants: %v", err)
			}
			_, twoAt := m.request(lastOfTwo)
			sent, threeAt := m.request(lastOfTwo + 1)
			if carried := threeAt == twoAt; carried != tt.carried {
				t.Errorf("turn three went on in turn two's array: %v, want %v", carried, tt.carried)
			}
			// Carried or not, turn three sends the thread's context and
			// its input.
			want := append(loop.ContextOf(before), llm.UserText("three"))
			if len(sent) != len(want) {
				t.Fatalf("turn three sent %d items, want %d", len(sent), len(want))
			}
			for i := range want {
				g, _ := json.Marshal(llm.Item{Role: sent[i].Role, Origin: sent[i].Origin, Parts: sent[i].Parts})
				w, _ := json.Marshal(llm.Item{Role: want[i].Role, Origin: want[i].Origin, Parts: want[i].Parts})
				if string(g) != string(w) {
					t.Errorf("turn three's item %d is %s, want %s", i, g, w)
				}
			}
		})
	}
}
