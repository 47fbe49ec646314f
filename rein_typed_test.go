package rein_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/tools/askuser"
)

type city struct {
	Name       string `json:"name" jsonschema:"the city's name"`
	Country    string `json:"country"`
	Population int    `json:"population"`
}

// TestRunTypedDecodesTheAnswer: the same turn through each output mode,
// with a wrong first answer repaired, decodes into the struct; the agent's
// plain turns are not offered the output's tool.
func TestRunTypedDecodesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		mode   llm.OutputMode
		script string
	}{
		{llm.OutputTool, `rounds:
  - calls: [{name: echo, args: {text: Paris}}]
  - calls: [{name: city, args: {name: Paris, country: France, population: "many"}}]
  - calls: [{name: city, args: {name: Paris, country: France, population: 2102650}}]
  - text: plain
    expect: [{tools: [echo]}]
`},
		{llm.OutputNative, `rounds:
  - calls: [{name: echo, args: {text: Paris}}]
  - text: 'Paris, France'
  - text: '{"name":"Paris","country":"France","population":2102650}'
  - text: plain
    expect: [{tools: [echo]}]
`},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			m := scriptedModel(t, tc.script)
			a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{echo}, OutputMode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			th := a.NewThread()
			got, out, err := rein.RunTyped[city](context.Background(), th, "Which city?")
			if err != nil {
				t.Fatalf("RunTyped: %v (outcome %+v)", err, out)
			}
			if want := (city{"Paris", "France", 2102650}); got != want {
				t.Errorf("answer %+v, want %+v", got, want)
			}
			if out.Rounds != 3 {
				t.Errorf("rounds %d, want 3 (a call, a wrong answer, its repair)", out.Rounds)
			}
			// The thread goes on with a plain turn, offered only echo.
			plain, err := th.Run(context.Background(), "thanks")
			if err != nil || plain.Answer != "plain" {
				t.Fatalf("plain turn: %v, %+v", err, plain)
			}
			if err := m.(*scripted.Model).Verify(); err != nil {
				t.Error(err)
			}
			if err := llm.CheckHistory(th.History()); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRunTypedReportsAnAnswerThatNeverMatches(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - text: 'Paris'
  - text: '{"name":"Paris"}'
`)
	a, err := rein.New(rein.Options{Model: m, OutputMode: rein.OutputNative})
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := rein.RunTyped[city](context.Background(), a.NewThread(), "Which city?")
	var oe *rein.OutputError
	if !errors.As(err, &oe) || out.StopReason != rein.StopInvalidOutput {
		t.Fatalf("err %v, outcome %+v; want an *OutputError and invalid_output", err, out)
	}
}

func TestOutputOfNamesAndStrictness(t *testing.T) {
	o, err := rein.OutputOf[city]()
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "city" || !o.Strict {
		t.Errorf("name %q strict %v, want city and strict (every field required)", o.Name, o.Strict)
	}
	type loose struct {
		A string `json:"a,omitempty"`
	}
	if o, _ := rein.OutputOf[loose](); o.Strict {
		t.Error("a struct with an optional field is strict")
	}
	if _, err := rein.OutputOf[[]city](); err == nil {
		t.Error("a slice type has an output")
	}
}

// TestRunTypedOnAPausedThreadLeavesThePausedTurnPlain: RunTyped on a
// thread whose plain turn is paused is refused, and the paused turn,
// answered, goes on plain: not offered the refused turn's output tool.
func TestRunTypedOnAPausedThreadLeavesThePausedTurnPlain(t *testing.T) {
	m := scriptedModel(t, `rounds:
  - calls: [{id: q1, name: ask_user, args: {questions: [{id: which, prompt: "Which city?"}]}}]
  - text: Paris it is.
    expect: [{tools: [ask_user]}]
`)
	a, err := rein.New(rein.Options{Model: m, Tools: []rein.Tool{askuser.New()}, OutputMode: llm.OutputTool})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := t.Context()
	th := a.NewThread()
	out, err := th.Run(ctx, "Which city?")
	if err != nil || out.Status != rein.StatusPaused {
		t.Fatalf("turn: %v, %+v; want paused", err, out)
	}
	if _, _, err := rein.RunTyped[city](ctx, th, "something else"); !errors.Is(err, rein.ErrPaused) {
		t.Fatalf("RunTyped on the paused thread: %v, want ErrPaused", err)
	}
	end, err := th.Answer(ctx, rein.Answer{TurnID: out.TurnID, CallID: "q1", Text: "Paris"})
	if err != nil || end.Status != rein.StatusCompleted || end.Answer != "Paris it is." || len(end.Output) != 0 {
		t.Fatalf("the answered turn: %v, %+v; want completed, plain", err, end)
	}
	if err := m.(*scripted.Model).Verify(); err != nil {
		t.Error(err)
	}
}
