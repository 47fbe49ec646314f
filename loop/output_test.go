package loop_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// person is the structured answer of these tests: every property required,
// none other allowed (strict).
var person = &llm.Output{
	Name:        "Person",
	Description: "A person with name, age, and city",
	Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}},` +
		`"required":["name","age","city"],"additionalProperties":false}`),
	Strict: true,
}

const alice = `{"name":"Alice","age":30,"city":"Paris"}`

func outputOptions(mode llm.OutputMode, tools ...tool.Tool) loop.Options {
	return loop.Options{Output: person, OutputMode: mode, Tools: tool.NewSet(tools...), Events: &events{}}
}

func wantOutput(t *testing.T, out *loop.Outcome, err error, reason loop.StopReason) {
	t.Helper()
	if err != nil || out.Status != loop.StatusCompleted || out.StopReason != reason {
		t.Fatalf("outcome %s/%s (err %v), want completed/%s", out.Status, out.StopReason, err, reason)
	}
	var got, want map[string]any
	if err := json.Unmarshal(out.Output, &got); err != nil {
		t.Fatalf("Output %q: %v", out.Output, err)
	}
	_ = json.Unmarshal([]byte(alice), &want)
	if !jsonEqual(got, want) || out.Answer != string(out.Output) {
		t.Fatalf("Output %s, Answer %q; want %s in both", out.Output, out.Answer, alice)
	}
}

func jsonEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestNativeOutputIsAskedForOnEveryRoundAndReturnedChecked(t *testing.T) {
	o := outputOptions(llm.OutputNative, textTool("lookup", "Alice, 30, Paris"))
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("lookup", nil)}},
		{Text: "```json\n" + alice + "\n```"},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	wantOutput(t, out, err, loop.StopFinished)
	for i, req := range m.Requests() {
		if req.Output == nil || req.Output.Name != "Person" || req.ForceTool != "" {
			t.Errorf("request %d: Output %v, ForceTool %q; want the schema and no forced tool", i+1, req.Output, req.ForceTool)
		}
		if slices.ContainsFunc(req.Tools, func(s llm.ToolSpec) bool { return s.Name == "Person" }) {
			t.Errorf("request %d offers the output as a tool in native mode", i+1)
		}
	}
}

func TestNativeOutputGetsOneRepairRoundWithTheValidationError(t *testing.T) {
	o := outputOptions(llm.OutputNative)
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Text: `{"name":"Alice","age":"thirty","city":"Paris"}`},
		{Text: alice, Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "age"}}}},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	wantOutput(t, out, err, loop.StopFinished)
	if out.Rounds != 2 {
		t.Errorf("rounds %d, want 2 (the answer and its repair)", out.Rounds)
	}
	last := m.Requests()[1].Items
	directive := last[len(last)-1]
	if directive.Origin != llm.OriginDirective || !strings.Contains(directive.Text(), "Person") || !strings.Contains(directive.Text(), "integer") {
		t.Errorf("the repair round's last item is %q (origin %s); want a directive naming the schema and the wrong field", directive.Text(), directive.Origin)
	}
	if w := o.Events.(*events).warnings(); !slices.Contains(w, event.WarnOutputRepair) {
		t.Errorf("warnings %v, want %s", w, event.WarnOutputRepair)
	}
}

func TestNativeOutputWrongTwiceFailsInvalidOutput(t *testing.T) {
	o := outputOptions(llm.OutputNative)
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Text: "Alice is 30 and lives in Paris."},
		{Text: `{"name":"Alice"}`},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	var oe *loop.OutputError
	if out.Status != loop.StatusFailed || out.StopReason != loop.StopInvalidOutput || !errors.As(err, &oe) {
		t.Fatalf("outcome %s/%s, err %v; want failed/invalid_output with an *OutputError", out.Status, out.StopReason, err)
	}
	if !strings.Contains(oe.Detail, "age") || out.Output != nil {
		t.Errorf("detail %q, output %s; want the missing fields named and no output", oe.Detail, out.Output)
	}
}

func TestToolOutputAloneIsForcedFromTheFirstRound(t *testing.T) {
	o := outputOptions(llm.OutputTool)
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{{Name: "Person", Args: json.RawMessage(alice)}}},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	wantOutput(t, out, err, loop.StopFinished)
	req := m.Requests()[0]
	if req.ForceTool != "Person" || req.Output != nil || len(req.Tools) != 1 || req.Tools[0].Name != "Person" {
		t.Errorf("request: ForceTool %q, Output %v, tools %v; want only Person, forced", req.ForceTool, req.Output, req.Tools)
	}
	// The call has its result, so the thread goes on valid.
	if err := llm.CheckHistory(out.Items); err != nil {
		t.Errorf("the turn's items: %v", err)
	}
}

func TestToolOutputAfterATextAnswerIsForced(t *testing.T) {
	o := outputOptions(llm.OutputTool, textTool("lookup", "Alice, 30, Paris"))
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("lookup", nil)}},
		{Text: "Alice is 30 and lives in Paris."},
		{Calls: []scripted.Call{{Name: "Person", Args: json.RawMessage(alice)}}, Expect: []scripted.Expect{
			{LastUser: &scripted.TextExpect{Contains: "calling Person"}},
			{ToolChoice: llm.ToolChoiceRequired},
		}},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	wantOutput(t, out, err, loop.StopFinished)
	reqs := m.Requests()
	if reqs[0].ForceTool != "" || reqs[1].ForceTool != "" || reqs[2].ForceTool != "Person" {
		t.Errorf("forced tools %q %q %q; want it forced only after the text answer", reqs[0].ForceTool, reqs[1].ForceTool, reqs[2].ForceTool)
	}
}

func TestToolOutputRefusedByTheSchemaIsRepairedOnce(t *testing.T) {
	bad := scripted.Call{Name: "Person", Args: map[string]any{"name": "Alice", "age": "thirty", "city": "Paris"}}
	t.Run("then right", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{bad}},
			{Calls: []scripted.Call{{Name: "Person", Args: json.RawMessage(alice)}}, Expect: []scripted.Expect{
				{Result: &scripted.ResultExpect{Contains: "age"}},
			}},
		}}, outputOptions(llm.OutputTool), "who is Alice?")
		mustVerify(t, m)
		wantOutput(t, out, err, loop.StopFinished)
	})
	t.Run("wrong twice", func(t *testing.T) {
		out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
			{Calls: []scripted.Call{bad}},
			{Calls: []scripted.Call{bad}},
		}}, outputOptions(llm.OutputTool), "who is Alice?")
		mustVerify(t, m)
		var oe *loop.OutputError
		if out.StopReason != loop.StopInvalidOutput || !errors.As(err, &oe) || !strings.Contains(oe.Detail, "age") {
			t.Fatalf("outcome %s/%s, err %v; want invalid_output naming the field", out.Status, out.StopReason, err)
		}
	})
}

func TestToolOutputInTheForcedFinalRoundRuns(t *testing.T) {
	o := outputOptions(llm.OutputTool, counterTool("counter"))
	o.MaxRounds, o.NoSettlement = 1, true
	out, m, err := runTurn(t, scripted.Script{Rounds: []scripted.Round{
		{Calls: []scripted.Call{call("counter", nil)}},
		{Calls: []scripted.Call{call("counter", nil), {Name: "Person", Args: json.RawMessage(alice)}}, Expect: []scripted.Expect{
			{Phase: llm.PhaseFinal},
			{LastUser: &scripted.TextExpect{Contains: "calling Person"}},
		}},
	}}, o, "who is Alice?")
	mustVerify(t, m)
	wantOutput(t, out, err, loop.StopForcedBudget)
	if f := m.Requests()[1].ForceTool; f != "Person" {
		t.Errorf("final round ForceTool %q, want Person", f)
	}
	// The other call of the final round was dropped, not run.
	var calls []string
	for _, it := range out.Items {
		for _, c := range it.Calls() {
			calls = append(calls, c.Name)
		}
	}
	if !slices.Equal(calls, []string{"counter", "Person"}) {
		t.Errorf("calls kept %v, want counter then Person", calls)
	}
	if err := llm.CheckHistory(out.Items); err != nil {
		t.Errorf("the turn's items: %v", err)
	}
}

func TestOutputOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  llm.Output
		tool string
		want string
	}{
		{"bad name", llm.Output{Name: "a person", Schema: person.Schema}, "", "letters"},
		{"not an object", llm.Output{Name: "L", Schema: json.RawMessage(`{"type":"array"}`)}, "", "root"},
		{"strict without required", llm.Output{Name: "P", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`), Strict: true}, "", "Strict"},
		{"name of a tool", *person, "Person", "name of a tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := tool.NewSet()
			if tc.tool != "" {
				set.Add(textTool(tc.tool, "x"))
			}
			_, err := loop.New(loop.Options{Model: scripted.New(scripted.Script{}), Output: &tc.out, OutputMode: llm.OutputTool, Tools: set})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
