package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Policy is a thread's approval policy (DESIGN §7.4): when a call must wait
// for the user's approval before it runs.
type Policy string

// Approval policies.
const (
	// PolicyNever never asks: a call that would need approval is refused,
	// and the refusal goes back to the model.
	PolicyNever Policy = "never"
	// PolicyOnRequest asks for the tools that declare NeedsApproval. It is
	// the default.
	PolicyOnRequest Policy = "on-request"
	// PolicyUntrusted asks for everything but read-only tools.
	PolicyUntrusted Policy = "untrusted"
)

// ParsePolicy parses a policy name; "" is on-request.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyOnRequest, nil
	case PolicyNever, PolicyOnRequest, PolicyUntrusted:
		return p, nil
	}
	return "", fmt.Errorf("approval policy %q: use never, on-request or untrusted", s)
}

// Verdict says what happens to a call before it runs.
type Verdict uint8

// Verdicts.
const (
	// Allow runs the call.
	Allow Verdict = iota
	// Ask pauses the turn until the user approves or denies the call.
	Ask
	// Refuse answers the call with an error without running it.
	Refuse
)

// Verdict returns what the policy says of a call to a tool with spec s.
func (p Policy) Verdict(s Spec) Verdict {
	needs := s.NeedsApproval
	if p == PolicyUntrusted && s.Access != ReadOnly && !s.Pauses {
		needs = true
	}
	switch {
	case !needs:
		return Allow
	case p == PolicyNever:
		return Refuse
	default:
		return Ask
	}
}

// CallApprover is implemented by tools some of whose calls need the
// user's approval whatever Spec.NeedsApproval says, because of what the
// arguments make them do: write_memory with scope "user" plants text that
// every workspace's system prompt then carries. Such a call waits for the
// user under every policy that asks (and is refused under PolicyNever),
// and a thread-wide approval of the tool does not cover it: each one is
// put to the user.
type CallApprover interface {
	// ApprovalFor returns why the call with args needs the user's
	// approval, said to the user (one sentence, no arguments), or "" when
	// it does not. It runs before the call, so it must be quick; when it
	// cannot tell, it should ask.
	ApprovalFor(ctx context.Context, args json.RawMessage) string
}

// ApprovalFor returns why the call of t with args needs the user's
// approval because of its arguments (CallApprover), or "".
func ApprovalFor(ctx context.Context, t Tool, args json.RawMessage) string {
	if a, ok := t.(CallApprover); ok {
		return a.ApprovalFor(ctx, args)
	}
	return ""
}
