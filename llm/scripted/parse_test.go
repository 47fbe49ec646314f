package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

func TestParseEveryField(t *testing.T) {
	s, err := LoadScript("testdata/features.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Script{
		Model: "feature-model", Chunk: 4, Delay: time.Millisecond,
		Rounds: []Round{
			{
				line: 6, Thinking: "Plan: look first.", Text: "Looking — «here».", Chunk: 3, Hold: 2 * time.Millisecond,
				Calls: []Call{
					{ID: "ls1", Name: "list_dir", Args: json.RawMessage(`{"path":".","depth":2,"hidden":false,"glob":"*.go && *.md"}`)},
					{Name: "read_file", RawArgs: `{"path": "main.go"`},
				},
				Finish: llm.FinishToolCalls,
				Usage:  llm.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 50, CacheWriteTokens: 10, ReasoningTokens: 5},
				Expect: []Expect{
					{Tools: []string{"list_dir", "read_file"}},
					{ToolChoice: llm.ToolChoiceAuto},
					{System: &TextExpect{Contains: "helpful"}},
				},
			},
			{
				line: 29, Text: "Still working.", Repeat: 2,
				Calls:  []Call{{Name: "list_dir", Args: json.RawMessage(`{"path":"src"}`)}},
				Expect: []Expect{{Result: &ResultExpect{Tool: "list_dir", Status: llm.ResultOK}}},
			},
			{line: 37, Text: "Partial ans", Error: &ErrorSpec{Kind: llm.StreamInterrupted, Message: "connection reset", After: 2}},
			{line: 40, Error: &ErrorSpec{Status: 429, RetryAfter: 1500 * time.Millisecond}},
			{
				line: 42, Text: "Done.", Finish: llm.FinishStop,
				Expect: []Expect{
					{Phase: llm.PhaseFinal},
					{ToolChoice: llm.ToolChoiceNone},
					{LastUser: &TextExpect{Contains: "answer now", Equals: "Answer now."}},
					{Result: &ResultExpect{Contains: "read"}},
				},
			},
		},
	}
	if !reflect.DeepEqual(s, want) {
		got, _ := json.MarshalIndent(s, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("parsed:\n%s\nwant:\n%s", got, exp)
	}
}

func TestParseJSONMatchesYAML(t *testing.T) {
	y, err := LoadScript("testdata/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := LoadScript("testdata/weather.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range y.Rounds {
		y.Rounds[i].line, j.Rounds[i].line = 0, 0
	}
	if !reflect.DeepEqual(y, j) {
		t.Errorf("JSON script differs from YAML:\n%+v\n%+v", j, y)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want string
	}{
		{"keeps key order", `{b: 1, a: x}`, `{"b":1,"a":"x"}`},
		{"nests", `{list: [true, null, {k: v}], obj: {}}`, `{"list":[true,null,{"k":"v"}],"obj":{}}`},
		{"numbers as written", `{i: 10, f: 1.50, e: 2e3}`, `{"i":10,"f":1.50,"e":2e3}`},
		{"YAML-only numbers converted", `{h: 0x1F, o: 0o17}`, `{"h":31,"o":15}`},
		{"dates stay text", `{d: 2024-01-02}`, `{"d":"2024-01-02"}`},
		{"no HTML escaping", `{cmd: "a && b > c"}`, `{"cmd":"a && b > c"}`},
		{"quoted numbers stay strings", `{n: "42"}`, `{"n":"42"}`},
		{"anchors expand", `{a: &x [1, 2], b: *x}`, `{"a":[1,2],"b":[1,2]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseScript([]byte("rounds:\n  - calls:\n      - name: f\n        args: " + tt.args + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := string(s.Rounds[0].Calls[0].Args.(json.RawMessage))
			if got != tt.want {
				t.Errorf("args = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseJSONEscapes(t *testing.T) {
	src := "{\n\t\"rounds\": [{\"text\": \"a\\/b \\u00e9 \\ud83d\\ude00 \\\"q\\\"\\n\", \"calls\": [{\"name\": \"f\", \"raw_args\": \"{\\\"p\\\": \\\"<x>\\\"}\"}]}]\n}"
	s, err := ParseScript([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Rounds[0].Text, "a/b é 😀 \"q\"\n"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got, want := s.Rounds[0].Calls[0].RawArgs, `{"p": "<x>"}`; got != want {
		t.Errorf("raw_args = %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"empty", "", "the script is empty"},
		{"not a mapping", "- text: hi\n", "line 1: script: want a mapping, got a list"},
		{"unknown top-level field", "model: m\nround: []\n", `line 2: script: unknown field at column 1 (did you mean "rounds"?) (known: model, chunk, delay, rounds)`},
		{"unknown round field", "rounds:\n  - text: hi\n    txt: hi\n", `line 3: round 1: unknown field at column 5 (did you mean "text"?)`},
		{"unknown call field", "rounds:\n  - calls:\n      - name: f\n        arguments: {}\n", `line 4: round 1, call 1: unknown field at column 9`},
		{"unknown expectation", "rounds:\n  - expect:\n      - last_assistant: x\n", `line 3: round 1, expect 1: unknown field at column 9`},
		{"field twice", "rounds:\n  - text: a\n    text: b\n", `line 3: round 1: field text given twice`},
		{"bad duration", "rounds:\n  - delay: 50\n", `line 2: round 1: delay: want a duration such as 50ms or 1.5s, got a number`},
		{"bad integer", "rounds:\n  - chunk: big\n", `line 2: round 1: chunk: want an integer, got a string`},
		{"text not a string", "rounds:\n  - text: [a]\n", "line 2: round 1: text: want a string, got a list"},
		{"args as text", "rounds:\n  - calls:\n      - name: f\n        args: '{}'\n", "line 4: round 1, call 1: args: want a mapping of arguments, got a string (use raw_args for argument text)"},
		{"infinite number", "rounds:\n  - calls:\n      - name: f\n        args: {x: .inf}\n", "cannot be written in JSON"},
		{"rounds not a list", "rounds: {text: a}\n", "line 1: script: rounds: want a list, got a mapping"},
		{"negative usage", "rounds:\n  - usage: {input_tokens: -1}\n", "line 2: round 1: usage: input_tokens: want 0 or more"},
		{"invalid value names the round and line", "rounds:\n  - text: a\n  - finish: done\n", `script round 2 (line 3): finish is not one of`},
		{"invalid JSON names the line", "{\n  \"rounds\": [\n    {\"text\": \"a\",}\n  ]\n}\n", "line 3: invalid JSON"},
		{"invalid YAML", "rounds: [\n", "not valid YAML: line 1:"},
		{"alias bomb", bomb(), "aliases?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// bomb returns a script whose arguments expand exponentially through
// aliases.
func bomb() string {
	var b strings.Builder
	b.WriteString("x0: &a0 [1, 2]\n")
	for i := 1; i < 30; i++ {
		b.WriteString(strings.NewReplacer("I", strconv.Itoa(i), "P", strconv.Itoa(i-1)).Replace("xI: &aI [*aP, *aP]\n"))
	}
	return "rounds:\n  - calls:\n      - name: f\n        args:\n" + indent(b.String(), "          ")
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pre) + "\n"
}

func TestLoadScriptNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte("rounds:\n  - txt: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScript(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": line 2: round 1:") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want os.ErrNotExist", err)
	}
}

// TestWeatherExample plays testdata/weather.yaml the way an engine would,
// with a fake get_weather tool, as a user testing their own tool does.
func TestWeatherExample(t *testing.T) {
	for _, file := range []string{"testdata/weather.yaml", "testdata/weather.json"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := LoadScript(file)
			if err != nil {
				t.Fatal(err)
			}
			m := New(s)
			answer, err := runTurn(m, "What's the weather in Paris?", func(c *llm.Call) string {
				if c.Name != "get_weather" || c.Args != `{"city":"Paris","unit":"C"}` {
					return "unknown call " + c.Name + " " + c.Args
				}
				return "sunny, 24 C"
			})
			if err != nil {
				t.Fatal(err)
			}
			if answer != "It is sunny in Paris." {
				t.Errorf("answer = %q", answer)
			}
			if err := m.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestWeatherExampleCatchesAWrongResult(t *testing.T) {
	s, err := LoadScript("testdata/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := New(s)
	_, err = runTurn(m, "What's the weather in Paris?", func(*llm.Call) string { return "rain" })
	want := `round 2 (line 16): expected the result of call "w1" to contain "sunny"; received "rain"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	if v := m.Verify(); v == nil || !strings.Contains(v.Error(), want) {
		t.Errorf("Verify = %v", v)
	}
}

// runTurn is a minimal engine: rounds until one has no calls.
func runTurn(m llm.Model, input string, run func(*llm.Call) string) (string, error) {
	history := []llm.Item{llm.UserText(input)}
	tools := []llm.ToolSpec{{Name: "get_weather"}}
	for round := 1; ; round++ {
		s, err := m.Stream(context.Background(), &llm.Request{Items: history, Tools: tools, Round: round, Phase: llm.PhaseExplore})
		if err != nil {
			return "", err
		}
		resp, err := llm.Collect(s)
		if err != nil {
			return "", err
		}
		item := llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}
		history = append(history, item)
		calls := item.Calls()
		if len(calls) == 0 {
			return item.Text(), nil
		}
		for _, c := range calls {
			history = append(history, llm.ToolResult(llm.Result{CallID: c.ID, Name: c.Name, Content: run(c)}))
		}
	}
}

// TestDocExample runs the example of docs/scripted.md and checks the error
// it shows, so the documentation cannot drift from the code.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scripted.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```yaml\n")
	script, rest, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("no yaml block in docs/scripted.md")
	}
	_, rest, _ = strings.Cut(rest, "repeats:\n\n```\n")
	shown, _, _ := strings.Cut(rest, "\n```")
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	sunny := func(*llm.Call) string { return "sunny, 24 C" }
	if _, err := runTurn(New(s), "What's the weather?", sunny); err != nil {
		t.Errorf("with a sunny tool: %v", err)
	}
	rain := func(*llm.Call) string { return "rain" }
	if _, err := runTurn(New(s), "What's the weather?", rain); err == nil || err.Error() != shown {
		t.Errorf("error = %v\ndocs show %s", err, shown)
	}
}
