package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// leakTool returns the environment's key in its result and in its error,
// as a file read or a failing command would.
func leakTool(key string) *fakeTool {
	return &fakeTool{
		spec: tool.Spec{Name: "leak", Access: tool.ReadOnly},
		run: func(_ context.Context, c tool.Call) (tool.Output, error) {
			if strings.Contains(string(c.Args), "fail") {
				return tool.Output{}, errors.New("401 Unauthorized: key " + key)
			}
			return tool.Output{Text: "OPENAI_API_KEY=" + key}, nil
		},
	}
}

// TestEngineRedactsByDefault pins that no door can forget redaction: an
// engine whose options name no redactor redacts with the environment's,
// so a provider key a tool returns (in a result or an error) reaches
// neither the model, nor the events, nor the journal.
func TestEngineRedactsByDefault(t *testing.T) {
	const key = "sk-proj-Zq7Wx2Yv4Ut6Sr8Qp0On1Ml3"
	t.Setenv("OPENAI_API_KEY", key)
	ev := &events{}
	j := &journal{}
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("leak", map[string]any{}), call("leak", map[string]any{"x": "fail"})}},
		{Text: "done"},
	}}, loop.Options{Tools: tool.NewSet(leakTool(key)), Events: ev, Journal: j}, "hi")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	var seen []string
	for _, req := range m.Requests() {
		for _, it := range req.Items {
			for _, r := range results(it) {
				seen = append(seen, "model: "+r.Content)
			}
		}
	}
	for _, e := range ev.of(event.Result) {
		seen = append(seen, "event: "+e.Content)
	}
	for _, it := range append(j.items, out.Items...) {
		for _, r := range results(it) {
			seen = append(seen, "journal: "+r.Content)
		}
	}
	if len(seen) < 6 {
		t.Fatalf("too few results seen: %q", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, key) || !strings.Contains(s, redact.Mask) {
			t.Errorf("not redacted: %s", s)
		}
	}
}

func TestEngineNoRedactOptsOut(t *testing.T) {
	const key = "sk-proj-Zq7Wx2Yv4Ut6Sr8Qp0On1Ml3"
	t.Setenv("OPENAI_API_KEY", key)
	ev := &events{}
	_, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("leak", map[string]any{})}},
		{Text: "done"},
	}}, loop.Options{Tools: tool.NewSet(leakTool(key)), Events: ev, NoRedact: true}, "hi")
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, m)
	if r := ev.of(event.Result); len(r) != 1 || !strings.Contains(r[0].Content, key) {
		t.Errorf("NoRedact still redacted: %+v", r)
	}
}

// journal records the items an engine journals.
type journal struct{ items []llm.Item }

func (j *journal) Record(_ context.Context, _ string, it llm.Item) error {
	j.items = append(j.items, it)
	return nil
}

func results(it llm.Item) []*llm.Result {
	var out []*llm.Result
	for _, p := range it.Parts {
		if p.Result != nil {
			out = append(out, p.Result)
		}
	}
	return out
}

// TestFailedTurnErrorIsRedacted: a provider that echoes the key in its
// error body does not get it printed or stored with the failed turn, and
// the error is still the provider's *llm.Error to errors.As.
func TestFailedTurnErrorIsRedacted(t *testing.T) {
	const key = "sk-proj-Zq7Wx2Yv4Ut6Sr8Qp0On1Ml3"
	t.Setenv("OPENAI_API_KEY", key)
	out, _, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Error: &scripted.ErrorSpec{Kind: llm.Unauthorized, Status: 401, Message: "invalid key " + key}},
	}}, loop.Options{}, "hi")
	if err == nil || out.Err == nil {
		t.Fatal("the turn did not fail")
	}
	for _, e := range []error{err, out.Err} {
		if strings.Contains(e.Error(), key) || !strings.Contains(e.Error(), redact.Mask) {
			t.Errorf("error text %q", e)
		}
		var le *llm.Error
		if !errors.As(e, &le) {
			t.Errorf("%T is no longer an *llm.Error to errors.As", e)
		}
	}
}
