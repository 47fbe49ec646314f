package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// globalWriter is a fake whose calls with {"scope":"user"} need the
// user's approval (tool.CallApprover), as write_memory's do.
type globalWriter struct{ *fake }

func (g globalWriter) ApprovalFor(_ context.Context, args json.RawMessage) string {
	var a struct {
		Scope string `json:"scope"`
	}
	if json.Unmarshal(args, &a) != nil || a.Scope == "user" {
		return "This writes what every workspace sees."
	}
	return ""
}

// TestACallItsArgumentsMakeAskIsAskedUnderEveryPolicy checks the one rule
// behind user-scope writes: a call whose tool says its arguments need
// approval waits for the user under on-request and untrusted, is refused
// under never (saying why), and is asked even when the tool was approved
// for the whole thread; a call of the same tool whose arguments need
// nothing runs. Before the rule, only the tool's spec was asked.
func TestACallItsArgumentsMakeAskIsAskedUnderEveryPolicy(t *testing.T) {
	const user, ws = `{"scope":"user"}`, `{"scope":"workspace"}`
	cases := []struct {
		name     string
		policy   tool.Policy
		approved bool
		args     string
		want     llm.ResultStatus
	}{
		{"on-request asks", tool.PolicyOnRequest, false, user, llm.ResultPending},
		{"untrusted asks", tool.PolicyUntrusted, false, user, llm.ResultPending},
		{"never refuses", tool.PolicyNever, false, user, llm.ResultError},
		{"a thread approval does not cover it", tool.PolicyOnRequest, true, user, llm.ResultPending},
		{"other arguments run", tool.PolicyOnRequest, false, ws, llm.ResultOK},
		{"other arguments run under never", tool.PolicyNever, false, ws, llm.ResultOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := globalWriter{&fake{spec: tool.Spec{Name: "remember", Access: tool.Mutating}}}
			d := New(Config{Tools: tool.NewSet(w), Approval: func(s tool.Spec, _ llm.Call) tool.Verdict { return c.policy.Verdict(s) }})
			info := RoundInfo{ThreadID: "th", TurnID: "tu", Round: 1}
			if c.approved {
				info.ApprovedTools = map[string]bool{"remember": true}
			}
			r := d.Begin(context.Background(), info)
			r.Add(llm.Call{ID: "c1", Name: "remember", Args: c.args})
			b := r.Finish()
			if got := b.Results[0].Status; got != c.want {
				t.Fatalf("status %s, want %s (%q)", got, c.want, b.Results[0].Content)
			}
			ran := w.runs.Load() == 1
			if ran != (c.want == llm.ResultOK) {
				t.Errorf("ran = %v with status %s", ran, c.want)
			}
			switch c.want {
			case llm.ResultPending:
				if len(b.Approvals) != 1 || b.Why[0] != "This writes what every workspace sees." {
					t.Errorf("approvals %v, why %v: the batch does not say why the call asks", b.Approvals, b.Why)
				}
			case llm.ResultError:
				if !strings.Contains(b.Results[0].Content, "every workspace sees") {
					t.Errorf("the refusal does not say why: %q", b.Results[0].Content)
				}
			}
		})
	}
	t.Run("an approved call runs", func(t *testing.T) {
		w := globalWriter{&fake{spec: tool.Spec{Name: "remember", Access: tool.Mutating}}}
		d := New(Config{Tools: tool.NewSet(w), Approval: func(s tool.Spec, _ llm.Call) tool.Verdict { return tool.PolicyOnRequest.Verdict(s) }})
		r := d.Begin(context.Background(), RoundInfo{ThreadID: "th", TurnID: "tu", Approved: true})
		r.Add(llm.Call{ID: "c1", Name: "remember", Args: user})
		if b := r.Finish(); b.Results[0].Status != llm.ResultOK || w.runs.Load() != 1 {
			t.Errorf("the user's approval did not run the call: %+v", b.Results[0])
		}
	})
}
