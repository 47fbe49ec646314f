package scripted

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/llm"
)

// check appends to problems a sentence for each part of e that req does not
// hold, saying what was expected and what was received.
func (e *Expect) check(req *llm.Request, problems []string) []string {
	if r := e.Result; r != nil {
		problems = r.check(req, problems)
	}
	if t := e.LastUser; t != nil {
		text, ok := lastUser(req)
		if !ok {
			problems = append(problems, "expected a trailing user message; "+describeLast(req))
		} else {
			problems = t.check("the last user message", text, problems)
		}
	}
	if t := e.System; t != nil {
		problems = t.check("the system prompt", req.System, problems)
	}
	if e.ToolChoice != "" {
		got := req.ToolChoice
		if got == "" {
			got = llm.ToolChoiceAuto
		}
		if got != e.ToolChoice {
			problems = append(problems, fmt.Sprintf("expected tool_choice %s; received %s", e.ToolChoice, got))
		}
	}
	if e.Tools != nil || e.ToolsInclude != nil {
		offered := toolNames(req.Tools)
		if e.Tools != nil {
			want := slices.Clone(e.Tools)
			slices.Sort(want)
			if !slices.Equal(slices.Compact(want), offered) {
				problems = append(problems, fmt.Sprintf("expected tools %v; received %v", want, offered))
			}
		}
		var missing []string
		for _, name := range e.ToolsInclude {
			if _, found := slices.BinarySearch(offered, name); !found {
				missing = append(missing, name)
			}
		}
		if missing != nil {
			problems = append(problems, fmt.Sprintf("expected tools to include %v; received %v", missing, offered))
		}
	}
	if e.Phase != "" && req.Phase != e.Phase {
		problems = append(problems, fmt.Sprintf("expected phase %s; received %s", e.Phase, orNone(string(req.Phase))))
	}
	return problems
}

func (t *TextExpect) check(what, got string, problems []string) []string {
	if t.Contains != "" && !strings.Contains(got, t.Contains) {
		problems = append(problems, fmt.Sprintf("expected %s to contain %q; received %s", what, t.Contains, quote(got)))
	}
	if t.Equals != "" && got != t.Equals {
		problems = append(problems, fmt.Sprintf("expected %s to equal %q; received %s", what, t.Equals, quote(got)))
	}
	return problems
}

func (r *ResultExpect) check(req *llm.Request, problems []string) []string {
	var what string
	switch {
	case r.Call != "":
		what = fmt.Sprintf("the result of call %q", r.Call)
	case r.Tool != "":
		what = fmt.Sprintf("the latest result of tool %q", r.Tool)
	default:
		what = "the latest tool result"
	}
	res := findResult(req, r.Call, r.Tool)
	if res == nil {
		return append(problems, fmt.Sprintf("expected %s; the history has none", what))
	}
	problems = (&TextExpect{Contains: r.Contains, Equals: r.Equals}).check(what, res.Content, problems)
	if r.Status != "" {
		got := res.Status
		if got == "" {
			got = llm.ResultOK
		}
		if got != r.Status {
			problems = append(problems, fmt.Sprintf("expected %s to have status %s; received %s", what, r.Status, got))
		}
	}
	return problems
}

// findResult returns the latest result answering call id, else the latest
// of tool name, else the latest of all.
func findResult(req *llm.Request, call, tool string) *llm.Result {
	for i := req.Len() - 1; i >= 0; i-- {
		it := req.At(i)
		if it.Role != llm.RoleTool {
			continue
		}
		res := it.Result()
		switch {
		case res == nil:
		case call != "":
			if res.CallID == call {
				return res
			}
		case tool != "":
			if res.Name == tool {
				return res
			}
		default:
			return res
		}
	}
	return nil
}

// lastUser returns the text of the trailing user-role items, which adapters
// send as one message.
func lastUser(req *llm.Request) (string, bool) {
	n := req.Len()
	i := n
	for i > 0 && req.At(i-1).Role == llm.RoleUser {
		i--
	}
	switch n - i {
	case 0:
		return "", false
	case 1:
		return req.At(i).Text(), true
	}
	texts := make([]string, 0, n-i)
	for ; i < n; i++ {
		texts = append(texts, req.At(i).Text())
	}
	return strings.Join(texts, "\n"), true
}

func describeLast(req *llm.Request) string {
	if req.Len() == 0 {
		return "the history is empty"
	}
	last := req.At(req.Len() - 1)
	switch last.Role {
	case llm.RoleTool:
		if r := last.Result(); r != nil {
			return fmt.Sprintf("the last item is the result of call %q", r.CallID)
		}
	case llm.RoleAssistant:
		return "the last item is an assistant message " + quote(last.Text())
	}
	return fmt.Sprintf("the last item has role %s", last.Role)
}

func toolNames(tools []llm.ToolSpec) []string {
	names := make([]string, len(tools))
	for i := range tools {
		names[i] = tools[i].Name
	}
	slices.Sort(names)
	return names
}

func orNone(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

// quote quotes a received text for a message, eliding the middle of long
// ones: the start and the end are what a reader recognises.
func quote(s string) string {
	const head, tail = 160, 80
	if len(s) <= head+tail+20 {
		return fmt.Sprintf("%q", s)
	}
	h, t := s[:head], s[len(s)-tail:]
	return fmt.Sprintf("%q … (%d bytes) … %q", strings.ToValidUTF8(h, ""), len(s)-head-tail, strings.ToValidUTF8(t, ""))
}
