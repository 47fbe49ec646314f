package askuser

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
)

func call(t *testing.T, args string) tool.Output {
	t.Helper()
	out, err := New().Run(context.Background(), tool.Call{ID: "c1", Name: Name, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("Run(%s): %v", args, err)
	}
	return out
}

func TestQuestionsAreNormalized(t *testing.T) {
	out := call(t, `{"intro":"Two things:","questions":[
		{"prompt":"Which city?","options":[{"label":"Paris"},{"label":"paris"},{"label":"Rome","description":"the capital"}]},
		{"id":"unit","prompt":"Celsius or Fahrenheit?"},
		{"id":"unit","prompt":"Again?","allow_free_text":false}]}`)
	if out.Pause == nil || out.Failed {
		t.Fatalf("no pause: %+v", out)
	}
	qs := out.Pause.Questions
	if len(qs) != 3 || qs[0].ID != "q1" || qs[1].ID != "unit" || qs[2].ID != "unit_2" {
		t.Fatalf("ids: %+v", qs)
	}
	if len(qs[0].Options) != 2 || qs[0].Options[1].Description != "the capital" {
		t.Errorf("options: %+v", qs[0].Options)
	}
	if !qs[0].AllowFreeText || qs[2].AllowFreeText {
		t.Errorf("free text defaults wrong: %v %v", qs[0].AllowFreeText, qs[2].AllowFreeText)
	}
	if !strings.Contains(out.Text, "Which city? | Celsius or Fahrenheit?") {
		t.Errorf("placeholder %q", out.Text)
	}
	if out.Pause.Intro != "Two things:" || out.Pause.Kind != tool.PauseAskUser {
		t.Errorf("pause %+v", out.Pause)
	}
}

func TestBadQuestionsAreErrorResults(t *testing.T) {
	long := strings.Repeat("x", MaxPrompt+1)
	tests := []struct{ name, args, want string }{
		{"no questions", `{"questions":[]}`, "one to four"},
		{"five questions", `{"questions":[{"prompt":"a"},{"prompt":"b"},{"prompt":"c"},{"prompt":"d"},{"prompt":"e"}]}`, "at most 4"},
		{"empty prompt", `{"questions":[{"prompt":"  "}]}`, "empty \"prompt\""},
		{"prompt too long", `{"questions":[{"prompt":"` + long + `"}]}`, "keep it under 800"},
		{"nine options", `{"questions":[{"prompt":"a","options":[{"label":"1"},{"label":"2"},{"label":"3"},{"label":"4"},{"label":"5"},{"label":"6"},{"label":"7"},{"label":"8"},{"label":"9"}]}]}`, "at most 8"},
		{"options without labels", `{"questions":[{"prompt":"a","options":[{"label":""}]}]}`, "no labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := call(t, tt.args)
			if !out.Failed || out.Pause != nil || !strings.Contains(out.Text, tt.want) {
				t.Errorf("got %+v, want a failed result containing %q", out, tt.want)
			}
		})
	}
}

func TestSpecIsAPauseTool(t *testing.T) {
	s := New().Spec()
	if s.Name != "ask_user" || !s.Pauses || s.Access != tool.ReadOnly {
		t.Errorf("spec %+v", s)
	}
}
