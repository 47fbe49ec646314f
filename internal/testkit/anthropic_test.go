package testkit

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

func TestDecodeAnthropicRequestEnforcesTheAPIRules(t *testing.T) {
	const tools = `"tools":[{"name":"weather","input_schema":{"type":"object"}}]`
	user := `{"role":"user","content":"Weather?"}`
	call := `{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"weather","input":{"location":"Florence"}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"40 C"}]},{"type":"text","text":"Be brief."}]}`
	body := func(extra string, msgs ...string) string {
		return `{"model":"claude-x","max_tokens":1000,` + extra + `"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	cases := []struct {
		name string
		body string
		want string // part of the error; empty means valid
	}{
		{"a valid tool round", body(tools+",", user, call, result), ""},
		{"string content is text", body("", `{"role":"user","content":"hi"}`), ""},
		{"result after text", body(tools+",", user, call, `{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"40 C"}]}`), "tool_result after text"},
		{"unanswered call", body(tools+",", user, call, `{"role":"user","content":"next"}`), `call "toolu_1" of the previous message has no tool_result`},
		{"call followed by an assistant message", body(tools+",", user, call, `{"role":"assistant","content":"more"}`), "not answered by a user message"},
		{"unsigned thinking", body(tools+",", user, `{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"}]}`), "without its thinking and signature"},
		{"blank text", body("", `{"role":"user","content":[{"type":"text","text":" \n"}]}`), "blank text block"},
		{"input not an object", body(tools+",", user, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":"{\"location\""}]}`, result), "is not an object"},
		{"calls without tool definitions", body("", user, call, result), "without tool definitions"},
		{"thinking budget not below max_tokens", body(`"thinking":{"type":"enabled","budget_tokens":1000},`, user), "thinking budget 1000"},
		{"result for an unknown call", body(tools+",", user, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}`), `unknown call "toolu_9"`},
		{"duplicate call ids", body(tools+",", user, call, result, call, result), "already used"},
		{"not JSON", `{"model":`, "request body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := DecodeAnthropicRequest([]byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("valid request refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want an error about %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestDecodeAnthropicRequestReadsItemsBack(t *testing.T) {
	b := `{"model":"m","max_tokens":10,"stream":true,"tools":[{"name":"weather"}],"messages":[
		{"role":"user","content":"Weather?"},
		{"role":"assistant","content":[{"type":"redacted_thinking","data":"d"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"weather","input":{"location":"Florence"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"no station"},{"type":"text","text":"Go on."}]}]}`
	items, stream, model, err := DecodeAnthropicRequest([]byte(b))
	if err != nil || !stream || model != "m" {
		t.Fatalf("err %v stream %v model %q", err, stream, model)
	}
	if len(items) != 4 {
		t.Fatalf("%d items, want 4", len(items))
	}
	if p := items[1].Parts[0]; p.Kind != llm.PartReasoning || p.Opaque == nil || p.Opaque.Encrypted != "d" {
		t.Errorf("redacted thinking read as %+v", p)
	}
	if c := items[1].Calls(); len(c) != 1 || c[0].Args != `{"location":"Florence"}` {
		t.Errorf("calls %+v", c)
	}
	if r := items[2].Result(); r == nil || r.CallID != "toolu_1" || r.Content != "no station" || r.Status != llm.ResultError {
		t.Errorf("result %+v", r)
	}
	if items[3].Role != llm.RoleUser || items[3].Text() != "Go on." {
		t.Errorf("last item %+v", items[3])
	}
}
