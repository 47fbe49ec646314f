package dispatch

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

func TestPausesOfToolsThatResumeThemselvesAreAllHonoured(t *testing.T) {
	// sub pauses with its own state (a sub-agent waiting for the user);
	// plain pauses with none, as a tool that is not a pause tool may.
	sub := &fake{spec: tool.Spec{Name: "sub", Access: tool.ReadOnly}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Text: "waiting", Pause: &tool.Pause{Kind: tool.PauseAskUser, Resume: json.RawMessage(`{"of":"` + c.ID + `"}`)}}, nil
	}}
	plain := &fake{spec: tool.Spec{Name: "plain", Access: tool.ReadOnly}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "waiting", Pause: &tool.Pause{Kind: tool.PauseAskUser}}, nil
	}}
	d := New(Config{Tools: tool.NewSet(sub, plain)})
	cs := []llm.Call{
		{ID: "a", Name: "sub", Args: `{}`},
		{ID: "b", Name: "plain", Args: `{}`},
		{ID: "c", Name: "sub", Args: `{"n":2}`},
		{ID: "d", Name: "plain", Args: `{"n":2}`},
	}
	b := runRound(t, d, cs)
	checkPairing(t, b, cs)
	if b.Pause == nil || b.Pause.CallID != "a" {
		t.Fatalf("pause %+v, want the first call's", b.Pause)
	}
	var more []string
	for _, p := range b.MorePauses {
		more = append(more, p.CallID)
	}
	if len(more) != 2 || more[0] != "b" || more[1] != "c" {
		t.Errorf("more pauses %v, want [b c]: every resumable pause and one plain one", more)
	}
	if string(b.MorePauses[1].Pause.Resume) != `{"of":"c"}` {
		t.Errorf("the second sub pause lost its state: %s", b.MorePauses[1].Pause.Resume)
	}
	if b.Results[3].Status != llm.ResultError {
		t.Errorf("a second plain pause: %+v, want refused", b.Results[3])
	}
}
