package session_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// TestSchedulerRedactsToolOutput pins that a scheduler's turns redact
// though its Setup names no redactor (a library user's, like the
// harness's): a key a tool returns reaches neither the model, nor the
// events, nor the store.
func TestSchedulerRedactsToolOutput(t *testing.T) {
	const key = "sk-ant-api03-Qq1Ww2Ee3Rr4Tt5Yy6Uu7"
	t.Setenv("ANTHROPIC_API_KEY", key)
	leak := &fakeTool{spec: tool.Spec{Name: "leak", Access: tool.ReadOnly}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		if strings.Contains(string(c.Args), "fail") {
			return tool.Output{}, errors.New("401: bad key " + key)
		}
		return tool.Output{Text: "ANTHROPIC_API_KEY=" + key}, nil
	}}
	h := newHarness(t, leak)
	var mu sync.Mutex
	var seen []string
	h.onEvent(func(e event.Event) {
		if e.Type == event.Result {
			mu.Lock()
			seen = append(seen, "event: "+e.Content)
			mu.Unlock()
		}
	})
	th, m := h.thread(scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "leak", Args: map[string]any{}}, {Name: "leak", Args: map[string]any{"x": "fail"}}}},
		{Text: "done"},
	}})
	tu := h.start(th, "go")
	h.wait(th, tu.ID)
	verify(t, m)
	for _, req := range m.Requests() {
		for _, it := range req.Items {
			for _, p := range it.Parts {
				if p.Result != nil {
					seen = append(seen, "model: "+p.Result.Content)
				}
			}
		}
	}
	for _, it := range h.items(th) {
		for _, p := range it.Parts {
			if p.Result != nil {
				seen = append(seen, "store: "+p.Result.Content)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 6 {
		t.Fatalf("too few results seen: %q", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, key) || !strings.Contains(s, redact.Mask) {
			t.Errorf("not redacted: %s", s)
		}
	}
}
