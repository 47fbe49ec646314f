package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// decoding is a fake that decodes its arguments ahead of the run
// (tool.Decoder) and reports the Input its runs got.
type decoding struct {
	*fake
	decode func(args json.RawMessage) (any, error)
}

func (d decoding) Decode(args json.RawMessage) (any, error) { return d.decode(args) }

// A tool that is a tool.Decoder gets its arguments decoded by the
// dispatcher, before its goroutine starts (tool.Decoder says why); one whose
// Decode fails gets nil and reports the error itself.
func TestDecoderInputReachesTheRun(t *testing.T) {
	type in struct{ N int }
	got := make(chan any, 4)
	f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		got <- c.Input
		return tool.Text("ok"), nil
	}}
	dt := decoding{fake: f, decode: func(args json.RawMessage) (any, error) {
		var v in
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, err
		}
		if v.N < 0 {
			return nil, errors.New("negative")
		}
		return v, nil
	}}
	d := New(Config{Tools: tool.NewSet(dt)})
	cs := []llm.Call{{ID: "a", Name: "t", Args: `{"N":7}`}}
	b := runRound(t, d, cs)
	checkPairing(t, b, cs)
	if v := <-got; v != (in{N: 7}) {
		t.Fatalf("Input %#v; want the decoded arguments", v)
	}
	cs = []llm.Call{{ID: "b", Name: "t", Args: `{"N":-1}`}}
	runRound(t, d, cs)
	if v := <-got; v != nil {
		t.Fatalf("Input %#v after a failed Decode; want nil", v)
	}
}
