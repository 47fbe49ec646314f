// Package askuser is the ask_user tool, rein's reference pause tool
// (DESIGN §4): the model asks the user one to four questions and the turn
// pauses until they are answered.
package askuser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/tool"
)

// Limits of one ask_user call (DESIGN §4).
const (
	MaxQuestions = 4
	MaxOptions   = 8
	MaxPrompt    = 800
	maxLabel     = 120
	maxDesc      = 200
	maxHeader    = 16
	maxIntro     = 400
)

// Name is the tool's name.
const Name = "ask_user"

type option struct {
	Label       string `json:"label" jsonschema:"the choice as the user sees it"`
	Description string `json:"description,omitempty" jsonschema:"one line saying what choosing it means"`
}

type question struct {
	ID            string   `json:"id,omitempty" jsonschema:"an id for the answer (default q1, q2, … in order)"`
	Prompt        string   `json:"prompt" jsonschema:"the question, at most 800 characters"`
	Header        string   `json:"header,omitempty" jsonschema:"a short label for the question, at most 16 characters"`
	Options       []option `json:"options,omitempty" jsonschema:"up to 8 choices; leave out for a free answer"`
	MultiSelect   bool     `json:"multi_select,omitempty" jsonschema:"the user may pick several options"`
	AllowFreeText *bool    `json:"allow_free_text,omitempty" jsonschema:"the user may answer in their own words (default true)"`
}

type input struct {
	Questions []question `json:"questions" jsonschema:"one to four questions, all asked at once"`
	Intro     string     `json:"intro,omitempty" jsonschema:"a sentence shown before the questions"`
}

// New returns the ask_user tool.
func New() tool.Tool {
	return tool.New(Name,
		"Ask the user one to four questions when you are genuinely blocked, all in one call; the turn waits for the answers. "+
			"Prefer acting over asking.",
		run, tool.WithAccess(tool.ReadOnly), tool.WithPause())
}

func run(_ context.Context, in input) (tool.Output, error) {
	p, err := Build(in.Intro, in.Questions)
	if err != nil {
		return tool.Output{Text: err.Error(), Failed: true}, nil
	}
	prompts := make([]string, len(p.Questions))
	for i, q := range p.Questions {
		prompts[i] = q.Prompt
	}
	meta, _ := json.Marshal(map[string]any{"ask_user": p})
	return tool.Output{
		Text:  "[awaiting user reply to: " + strings.Join(prompts, " | ") + "]",
		Meta:  meta,
		Pause: p,
	}, nil
}

// Build checks and normalizes the questions: ids default to q1, q2, …;
// duplicate ids and option labels are made unique or dropped; text is cut
// to the limits. Bad input is an error whose text the model can act on.
func Build(intro string, qs []question) (*tool.Pause, error) {
	if len(qs) == 0 {
		return nil, fmt.Errorf(`ask_user needs "questions": one to four objects with a "prompt"`)
	}
	if len(qs) > MaxQuestions {
		return nil, fmt.Errorf("ask_user takes at most %d questions, got %d; ask the most important ones now", MaxQuestions, len(qs))
	}
	p := &tool.Pause{Kind: tool.PauseAskUser, Intro: cut(intro, maxIntro)}
	ids := map[string]bool{}
	for i, q := range qs {
		prompt := strings.TrimSpace(q.Prompt)
		if prompt == "" {
			return nil, fmt.Errorf("question %d has an empty \"prompt\"; write the question the user should answer", i+1)
		}
		if utf8.RuneCountInString(prompt) > MaxPrompt {
			return nil, fmt.Errorf("question %d's prompt has %d characters; keep it under %d", i+1, utf8.RuneCountInString(prompt), MaxPrompt)
		}
		if len(q.Options) > MaxOptions {
			return nil, fmt.Errorf("question %d has %d options; offer at most %d", i+1, len(q.Options), MaxOptions)
		}
		id := strings.TrimSpace(q.ID)
		if id == "" {
			id = fmt.Sprintf("q%d", i+1)
		}
		for base, n := id, 2; ids[id]; n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
		ids[id] = true
		free := q.AllowFreeText == nil || *q.AllowFreeText
		out := tool.Question{ID: id, Prompt: prompt, Header: cut(q.Header, maxHeader), MultiSelect: q.MultiSelect, AllowFreeText: free}
		seen := map[string]bool{}
		for _, o := range q.Options {
			label := cut(strings.TrimSpace(o.Label), maxLabel)
			if label == "" || seen[strings.ToLower(label)] {
				continue
			}
			seen[strings.ToLower(label)] = true
			out.Options = append(out.Options, tool.Option{Label: label, Description: cut(o.Description, maxDesc)})
		}
		if len(q.Options) > 0 && len(out.Options) == 0 {
			return nil, fmt.Errorf("question %d's options have no labels; give each option a \"label\"", i+1)
		}
		p.Questions = append(p.Questions, out)
	}
	return p, nil
}

func cut(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
