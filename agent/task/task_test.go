package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// lanes routes each request to the scripted model of the turn it belongs
// to, told by the first user message: the parent's ("parent" lane) or a
// child's (its prompt), so children running in parallel each follow their
// own script.
type lanes struct {
	parent *scripted.Model
	mu     sync.Mutex
	child  map[string]*scripted.Model
}

func (l *lanes) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	first := ""
	for _, it := range req.Items {
		if it.Role == llm.RoleUser {
			first = it.Text()
			break
		}
	}
	l.mu.Lock()
	m, ok := l.child[first]
	l.mu.Unlock()
	if !ok {
		m = l.parent
	}
	return m.Stream(ctx, req)
}

func (l *lanes) verify(t *testing.T) {
	t.Helper()
	if err := l.parent.Verify(); err != nil {
		t.Errorf("parent script: %v", err)
	}
	for p, m := range l.child {
		if err := m.Verify(); err != nil {
			t.Errorf("child %q script: %v", p, err)
		}
	}
}

func newLanes(parent []scripted.Round, children map[string][]scripted.Round) *lanes {
	l := &lanes{parent: scripted.New(scripted.Script{Rounds: parent}, scripted.RecordRequests()), child: map[string]*scripted.Model{}}
	for p, rs := range children {
		l.child[p] = scripted.New(scripted.Script{Rounds: rs}, scripted.RecordRequests())
	}
	return l
}

// fakeTool is a tool whose run the test gives.
type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Output, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	return f.run(ctx, c)
}

func textTool(name, text string, access tool.Access) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: name, Access: access}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: text}, nil
	}}
}

// events collects a turn's events.
type events struct {
	mu  sync.Mutex
	all []event.Event
}

func (e *events) Handle(ev event.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// nested returns the child events carried on the parent's stream, with
// the Subagent event that carried each.
func (e *events) nested() (carriers, subs []event.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		if ev.Type == event.Subagent && ev.Sub != nil {
			carriers = append(carriers, ev)
			subs = append(subs, *ev.Sub)
		}
	}
	return carriers, subs
}

func taskCall(id, prompt string, extra map[string]any) scripted.Call {
	args := map[string]any{"description": "look it up", "prompt": prompt}
	for k, v := range extra {
		args[k] = v
	}
	return scripted.Call{ID: id, Name: task.Name, Args: args}
}

func bound(t *tool.Set, tk *task.Tool) *tool.Set {
	tk.Bind(t)
	return t
}

func resultOf(items []llm.Item, callID string) *llm.Result {
	for _, it := range items {
		if r := it.Result(); r != nil && r.CallID == callID {
			return r
		}
	}
	return nil
}

func TestSubagentAnswerIsTheCallsResultAndItsEventsAreNested(t *testing.T) {
	const prompt = "Find the capital of Norway."
	m := newLanes(
		[]scripted.Round{
			{Text: "Delegating.", Calls: []scripted.Call{taskCall("t1", prompt, nil)}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}},
			{Text: "Oslo, says the sub-agent.", Usage: llm.Usage{InputTokens: 20, OutputTokens: 5},
				Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: "It is Oslo."}}}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "c1", Name: "lookup", Args: map[string]any{}}}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 50}},
			{Text: "It is Oslo.", Usage: llm.Usage{InputTokens: 200, OutputTokens: 50}},
		}},
	)
	tk := task.New(task.Options{})
	var ev events
	eng, err := loop.New(loop.Options{Model: m, System: "You help.", Tools: bound(tool.NewSet(textTool("lookup", "Oslo", tool.ReadOnly), tk), tk), Events: &ev})
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th_parent", Input: []llm.Item{llm.UserText("What is the capital of Norway? Secret parent context.")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out.Status != loop.StatusCompleted || out.Answer != "Oslo, says the sub-agent." {
		t.Fatalf("parent: %s %q", out.Status, out.Answer)
	}
	if r := resultOf(out.Items, "t1"); r == nil || r.Content != "It is Oslo." || r.Status != llm.ResultOK {
		t.Fatalf("task result %+v", r)
	}

	// The child's context is its own: the prompt, not the parent's history;
	// the parent's system prompt with the sub-agent's block; no task tool
	// at the depth limit.
	creq := m.child[prompt].Requests()[0]
	if len(creq.Items) != 1 || creq.Items[0].Text() != prompt {
		t.Errorf("child's first request has %d items: %+v", len(creq.Items), creq.Items)
	}
	if !strings.HasPrefix(creq.System, "You help.") || !strings.Contains(creq.System, "sub-agent") {
		t.Errorf("child system prompt %q", creq.System)
	}
	for _, s := range creq.Tools {
		if s.Name == task.Name {
			t.Errorf("a child at depth 1 (the default limit) was offered task")
		}
	}

	// Budget accounting: the parent's usage holds the child's.
	want := llm.Usage{InputTokens: 330, OutputTokens: 110}
	if out.Usage != want {
		t.Errorf("parent usage %+v, want its own and the child's %+v", out.Usage, want)
	}

	carriers, subs := ev.nested()
	if len(subs) == 0 {
		t.Fatal("no nested events")
	}
	var types []event.Type
	for i, c := range carriers {
		if c.CallID != "t1" || c.Depth != 1 || c.ThreadID != "th_parent" || c.TurnID != out.TurnID {
			t.Errorf("carrier %d: call %q depth %d thread %q turn %q", i, c.CallID, c.Depth, c.ThreadID, c.TurnID)
		}
		if subs[i].ThreadID == "th_parent" || subs[i].ThreadID == "" {
			t.Errorf("child event %d on thread %q, want a thread of its own", i, subs[i].ThreadID)
		}
		switch subs[i].Type {
		case event.TextDelta, event.ThinkingDelta, event.CallDelta:
			t.Errorf("child delta %s forwarded", subs[i].Type)
		}
		types = append(types, subs[i].Type)
	}
	if types[0] != event.TurnStarted || types[len(types)-1] != event.TurnCompleted {
		t.Errorf("child events %v: want turn_started first, turn_completed last", types)
	}
	last := subs[len(subs)-1]
	if last.Turn == nil || last.Turn.Usage != (llm.Usage{InputTokens: 300, OutputTokens: 100}) || last.Turn.Answer != "It is Oslo." {
		t.Errorf("child's turn_completed summary %+v", last.Turn)
	}
	var lookup bool
	for _, s := range subs {
		lookup = lookup || (s.Type == event.ToolStarted && s.Name == "lookup")
	}
	if !lookup {
		t.Errorf("the child's tool call is not among the nested events %v", types)
	}
}

func TestSubagentTokensCountAgainstTheParentsBudget(t *testing.T) {
	const prompt = "Read everything."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 10}},
			// The forced final round: the budget is spent.
			{Text: "Out of budget; here is what I have.", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}}},
		},
		map[string][]scripted.Round{prompt: {
			// The child's budget is what the parent had left (980): after
			// this round it is spent, so its next round is its forced final.
			{Calls: []scripted.Call{{ID: "c1", Name: "lookup", Args: map[string]any{}}}, Usage: llm.Usage{InputTokens: 900, OutputTokens: 100}},
			{Text: "Partial findings.", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}}},
		}},
	)
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(textTool("lookup", "data", tool.ReadOnly), tk), tk), Budget: loop.Budget{Tokens: 1000}})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out.StopReason != loop.StopForcedTokens {
		t.Errorf("stop reason %s, want %s: the child's tokens count against the parent's budget", out.StopReason, loop.StopForcedTokens)
	}
	if out.Usage.Total() != 1020 {
		t.Errorf("parent usage %d tokens, want 1020 (20 own + 1000 the child's)", out.Usage.Total())
	}
	if r := resultOf(out.Items, "t1"); r == nil || r.Content != "Partial findings." {
		t.Errorf("task result %+v", r)
	}
}

func TestSubagentRoundsAreBoundedByWhatTheParentHasLeft(t *testing.T) {
	const prompt = "Loop forever."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{{ID: "a", Name: "lookup", Args: map[string]any{}}}},
			{Calls: []scripted.Call{taskCall("t1", prompt, map[string]any{"max_rounds": 10})}},
			{Text: "done"},
		},
		map[string][]scripted.Round{prompt: {
			// The parent (MaxRounds 3) had 2 rounds left when it called
			// task: 2 exploration rounds, then settlement and the forced
			// final round (no settlement here).
			{Calls: []scripted.Call{{ID: "c1", Name: "lookup", Args: map[string]any{"n": 1}}}},
			{Calls: []scripted.Call{{ID: "c2", Name: "lookup", Args: map[string]any{"n": 2}}}},
			{Text: "stopped", Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}}},
		}},
	)
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, MaxRounds: 3, NoSettlement: true, Tools: bound(tool.NewSet(textTool("lookup", "data", tool.ReadOnly), tk), tk)})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if r := resultOf(out.Items, "t1"); r == nil || r.Content != "stopped" {
		t.Errorf("task result %+v", r)
	}
}

func TestInterruptingTheParentCancelsTheChild(t *testing.T) {
	const prompt = "Wait for it."
	m := newLanes(
		[]scripted.Round{{Calls: []scripted.Call{taskCall("t1", prompt, nil)}}},
		map[string][]scripted.Round{prompt: {{Calls: []scripted.Call{{ID: "c1", Name: "block", Args: map[string]any{}}}}}},
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	childCancelled := make(chan struct{})
	block := &fakeTool{spec: tool.Spec{Name: "block", Access: tool.ReadOnly}, run: func(c context.Context, _ tool.Call) (tool.Output, error) {
		cancel() // the user interrupts the parent while the child's tool runs
		select {
		case <-c.Done():
			close(childCancelled)
			return tool.Output{}, c.Err()
		case <-time.After(time.Minute):
			return tool.Output{Text: "never cancelled"}, nil
		}
	}}
	tk := task.New(task.Options{})
	var ev events
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(block, tk), tk), Events: &ev, Grace: 30 * time.Second})
	out, err := eng.Run(ctx, loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-childCancelled:
	default:
		t.Fatal("the child's tool never saw the interrupt")
	}
	if out.Status != loop.StatusInterrupted {
		t.Errorf("parent %s, want interrupted", out.Status)
	}
	_, subs := ev.nested()
	if len(subs) == 0 || subs[len(subs)-1].Type != event.TurnCompleted || subs[len(subs)-1].Status != string(loop.StatusInterrupted) {
		t.Errorf("the child's last event is not its interrupted end: %+v", subs)
	}
	if r := resultOf(out.Items, "t1"); r == nil || r.Status != llm.ResultAborted {
		t.Errorf("task result %+v, want aborted", r)
	}
}

// deployTool needs approval and counts its runs.
func deployTool(runs *int) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: "deploy", Access: tool.Mutating, NeedsApproval: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		*runs++
		return tool.Output{Text: "deployed"}, nil
	}}
}

func TestAChildsApprovalPausesTheParentAndTheAnswerResumesTheChild(t *testing.T) {
	const prompt = "Deploy the site."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "The site is deployed.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: "Deployed it."}}}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{"env": "prod"}}}},
			{Text: "Deployed it.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "d1", Contains: "deployed"}}}},
		}},
	)
	runs := 0
	tk := task.New(task.Options{})
	tools := bound(tool.NewSet(deployTool(&runs), tk), tk)
	var ev events
	eng, _ := loop.New(loop.Options{Model: m, Tools: tools, Events: &ev})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("ship it")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != loop.StatusPaused || out.Pause == nil {
		t.Fatalf("parent %s pause %+v, want paused on the child's approval", out.Status, out.Pause)
	}
	if runs != 0 {
		t.Fatal("deploy ran in the child without the approval the parent would have needed")
	}
	p := out.Pause
	if p.CallID != "t1" || p.Tool != task.Name || p.Kind != tool.PauseApproval || !strings.Contains(string(p.Payload), `"tool":"deploy"`) {
		t.Fatalf("parent pause %+v payload %s", p, p.Payload)
	}
	var req *event.Event
	for _, e := range ev.all {
		if e.Type == event.PauseRequested {
			req = &e
		}
	}
	if req == nil || req.Pause == nil || !strings.Contains(string(req.Pause.Payload), "deploy") || req.Pause.Resume != nil || !strings.Contains(req.Args, `"tool":"deploy"`) {
		t.Fatalf("pause_requested shows %+v", req)
	}
	// Through JSON, as the store keeps a paused turn.
	blob, err := json.Marshal(out.State)
	if err != nil {
		t.Fatal(err)
	}
	var st loop.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	eng2, _ := loop.New(loop.Options{Model: m, Tools: tools, Events: &ev})
	out2, err := eng2.Resume(t.Context(), &st, loop.Answer{TurnID: p.TurnID, CallID: "t1", Decision: loop.Approve})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out2.Status != loop.StatusCompleted || out2.Answer != "The site is deployed." || runs != 1 {
		t.Fatalf("resumed parent %s %q, deploy ran %d times", out2.Status, out2.Answer, runs)
	}
	if r := resultOf(out2.Items, "t1"); r == nil || r.Content != "Deployed it." {
		t.Errorf("task result %+v", r)
	}
}

func TestAChildsDeniedApprovalNeverRuns(t *testing.T) {
	const prompt = "Deploy the site."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "Not deployed.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: "was denied"}}}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{}}}},
			{Text: "It was denied.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "d1", Contains: "denied"}}}},
		}},
	)
	runs := 0
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(deployTool(&runs), tk), tk)})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("ship it")}})
	if err != nil || out.Pause == nil {
		t.Fatalf("%v %+v", err, out)
	}
	out2, err := eng.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "t1", Decision: loop.Deny})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out2.Status != loop.StatusCompleted || runs != 0 {
		t.Errorf("parent %s, deploy ran %d times", out2.Status, runs)
	}
}

// waiter answers every pause in process and remembers what it was asked.
type waiter struct {
	mu     sync.Mutex
	pauses []loop.Pause
}

func (w *waiter) Wait(_ context.Context, p loop.Pause) (loop.Answer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pauses = append(w.pauses, p)
	if p.Kind == tool.PauseApproval {
		return loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Decision: loop.Approve}, nil
	}
	return loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Text: "blue"}, nil
}

func TestAChildsPausesGoToTheParentsWaiterInProcess(t *testing.T) {
	const prompt = "Ask and deploy."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "All done."},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "q1", Name: "ask", Args: map[string]any{}}}},
			{Calls: []scripted.Call{{ID: "d1", Name: "deploy", Args: map[string]any{}}},
				Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q1", Contains: "blue"}}}},
			{Text: "Deployed in blue."},
		}},
	)
	runs := 0
	ask := &fakeTool{spec: tool.Spec{Name: "ask", Access: tool.ReadOnly, Pauses: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "(waiting)", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "Colour?"}}}}, nil
	}}
	tk := task.New(task.Options{})
	w := &waiter{}
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(ask, deployTool(&runs), tk), tk), Waiter: w})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out.Status != loop.StatusCompleted || runs != 1 {
		t.Fatalf("parent %s, deploy ran %d times", out.Status, runs)
	}
	if len(w.pauses) != 2 || w.pauses[0].Tool != "ask" || w.pauses[1].Tool != "deploy" || w.pauses[0].ThreadID == "th" {
		t.Errorf("the waiter was asked %+v; want the child's ask, then its deploy, on the child's thread", w.pauses)
	}
	if r := resultOf(out.Items, "t1"); r == nil || r.Content != "Deployed in blue." {
		t.Errorf("task result %+v", r)
	}
}

func TestAChildsQuestionPausesTheParentAndTheAnswerReachesTheChild(t *testing.T) {
	const prompt = "Ask the colour."
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
			{Text: "Blue it is.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: "The user wants blue."}}}},
		},
		map[string][]scripted.Round{prompt: {
			{Calls: []scripted.Call{{ID: "q1", Name: "ask", Args: map[string]any{}}}},
			{Text: "The user wants blue.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "q1", Contains: "blue"}}}},
		}},
	)
	ask := &fakeTool{spec: tool.Spec{Name: "ask", Access: tool.ReadOnly, Pauses: true}, run: func(context.Context, tool.Call) (tool.Output, error) {
		return tool.Output{Text: "(waiting)", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "Colour?"}}}}, nil
	}}
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(ask, tk), tk)})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil || out.Pause == nil {
		t.Fatalf("%v %+v", err, out)
	}
	if out.Pause.Kind != tool.PauseAskUser || len(out.Pause.Questions) != 1 || out.Pause.Questions[0].Prompt != "Colour?" {
		t.Fatalf("parent pause %+v, want the child's question", out.Pause)
	}
	out2, err := eng.Resume(t.Context(), out.State, loop.Answer{TurnID: out.TurnID, CallID: "t1", Answers: []loop.QuestionAnswer{{QuestionID: "q1", Text: "blue"}}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out2.Status != loop.StatusCompleted || out2.Answer != "Blue it is." {
		t.Errorf("resumed parent %s %q", out2.Status, out2.Answer)
	}
}

func TestDepthLimit(t *testing.T) {
	t.Run("a child at the default limit cannot call task", func(t *testing.T) {
		const prompt = "Delegate again."
		m := newLanes(
			[]scripted.Round{
				{Calls: []scripted.Call{taskCall("t1", prompt, nil)}},
				{Text: "ok"},
			},
			map[string][]scripted.Round{prompt: {
				{Calls: []scripted.Call{taskCall("t2", "deeper", nil)}},
				{Text: "I could not delegate.", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t2", Contains: `no tool named "task"`}}}},
			}},
		)
		tk := task.New(task.Options{})
		eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(tk), tk)})
		out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
		if err != nil {
			t.Fatal(err)
		}
		m.verify(t)
		if r := resultOf(out.Items, "t1"); r == nil || r.Content != "I could not delegate." {
			t.Errorf("task result %+v", r)
		}
	})
	t.Run("with depth 2 a grandchild runs, its events nested twice", func(t *testing.T) {
		m := newLanes(
			[]scripted.Round{
				{Calls: []scripted.Call{taskCall("t1", "child", nil)}},
				{Text: "ok", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: "grandchild says hi"}}}},
			},
			map[string][]scripted.Round{
				"child":      {{Calls: []scripted.Call{taskCall("t2", "grandchild", nil)}}, {Text: "grandchild says hi"}},
				"grandchild": {{Text: "hi"}},
			},
		)
		tk := task.New(task.Options{MaxDepth: 2})
		var ev events
		eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(tk), tk), Events: &ev})
		if _, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}}); err != nil {
			t.Fatal(err)
		}
		m.verify(t)
		for _, s := range m.child["grandchild"].Requests()[0].Tools {
			if s.Name == task.Name {
				t.Error("the grandchild, at the limit, was offered task")
			}
		}
		deepest := 0
		carriers, _ := ev.nested()
		for _, c := range carriers {
			if c.Depth == 2 && c.Sub.Type == event.Subagent && c.Sub.Sub != nil && c.Sub.CallID == "t2" {
				deepest = 2
			}
		}
		if deepest != 2 {
			t.Error("no grandchild event nested in a child's subagent event at depth 2")
		}
	})
	t.Run("a child that calls task anyway is refused", func(t *testing.T) {
		// A probe in the child calls the task tool with the child's own
		// call context: depth 1, at the limit.
		const prompt = "probe"
		m := newLanes(
			[]scripted.Round{{Calls: []scripted.Call{taskCall("t1", prompt, nil)}}, {Text: "ok"}},
			map[string][]scripted.Round{prompt: {{Calls: []scripted.Call{{ID: "p1", Name: "probe", Args: map[string]any{}}}}, {Text: "probed"}}},
		)
		tk := task.New(task.Options{})
		var refusal string
		probe := &fakeTool{spec: tool.Spec{Name: "probe", Access: tool.ReadOnly}, run: func(ctx context.Context, _ tool.Call) (tool.Output, error) {
			out, err := tk.Run(ctx, tool.Call{ID: "x", Name: task.Name, Args: json.RawMessage(`{"description":"d","prompt":"deeper"}`)})
			if err != nil || !out.Failed {
				t.Errorf("a task call at depth 1: %+v %v", out, err)
			}
			refusal = out.Text
			return tool.Output{Text: "done"}, nil
		}}
		eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(probe, tk), tk)})
		if _, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}}); err != nil {
			t.Fatal(err)
		}
		m.verify(t)
		if !strings.Contains(refusal, "nest at most 1 deep") {
			t.Errorf("refusal %q", refusal)
		}
	})
	t.Run("outside a turn of the engine it refuses", func(t *testing.T) {
		tk := task.New(task.Options{})
		out, err := tk.Run(t.Context(), tool.Call{ID: "x", Name: task.Name, Args: json.RawMessage(`{"description":"d","prompt":"p"}`)})
		if err != nil || !out.Failed {
			t.Errorf("outside a turn: %+v %v", out, err)
		}
	})
}

func TestReadOnlySubagentsRunInParallel(t *testing.T) {
	// Each child's probe waits until both have started: it returns only
	// when the two children run at once.
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	probe := &fakeTool{spec: tool.Spec{Name: "probe", Access: tool.ReadOnly}, run: func(ctx context.Context, _ tool.Call) (tool.Output, error) {
		started.Done()
		select {
		case <-both:
			return tool.Output{Text: "seen"}, nil
		case <-time.After(30 * time.Second):
			return tool.Output{Text: "alone", Failed: true}, nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}}
	write := textTool("write", "ok", tool.Mutating)
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{
				taskCall("a", "probe A", map[string]any{"read_only": true}),
				taskCall("b", "probe B", map[string]any{"tools": []string{"probe"}}),
			}},
			{Text: "both done", Expect: []scripted.Expect{
				{Result: &scripted.ResultExpect{Call: "a", Contains: "A saw"}},
				{Result: &scripted.ResultExpect{Call: "b", Contains: "B saw"}},
			}},
		},
		map[string][]scripted.Round{
			"probe A": {{Calls: []scripted.Call{{ID: "pa", Name: "probe", Args: map[string]any{}}}}, {Text: "A saw", Expect: []scripted.Expect{{Tools: []string{"probe"}}, {Result: &scripted.ResultExpect{Call: "pa", Contains: "seen"}}}}},
			"probe B": {{Calls: []scripted.Call{{ID: "pb", Name: "probe", Args: map[string]any{}}}}, {Text: "B saw", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "pb", Contains: "seen"}}}}},
		},
	)
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(probe, write, tk), tk), DefaultToolTimeout: 2 * time.Minute})
	out, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	m.verify(t)
	if out.Answer != "both done" {
		t.Errorf("answer %q", out.Answer)
	}
}

func TestTaskKeys(t *testing.T) {
	tk := task.New(task.Options{})
	set := bound(tool.NewSet(textTool("read", "", tool.ReadOnly), textTool("write", "", tool.Mutating), tk), tk)
	_ = set
	for _, c := range []struct {
		args      string
		exclusive bool
	}{
		{`{"description":"d","prompt":"p"}`, true},
		{`{"description":"d","prompt":"p","read_only":true}`, false},
		{`{"description":"d","prompt":"p","tools":["read"]}`, false},
		{`{"description":"d","prompt":"p","tools":["read","write"]}`, true},
		{`{"description":"d","prompt":"p","tools":["nonesuch"]}`, true},
		{`not json`, true},
	} {
		if got := tk.Keys(json.RawMessage(c.args)).Exclusive; got != c.exclusive {
			t.Errorf("Keys(%s).Exclusive = %v, want %v", c.args, got, c.exclusive)
		}
	}
}

func TestBadArgumentsAreReadableFailures(t *testing.T) {
	const prompt = "x"
	m := newLanes(
		[]scripted.Round{
			{Calls: []scripted.Call{taskCall("t1", prompt, map[string]any{"tools": []string{"nonesuch"}})}},
			{Text: "ok", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "t1", Contains: `"nonesuch" is not one of the tools`}}}},
		},
		nil,
	)
	tk := task.New(task.Options{})
	eng, _ := loop.New(loop.Options{Model: m, Tools: bound(tool.NewSet(tk), tk)})
	if _, err := eng.Run(t.Context(), loop.Turn{ThreadID: "th", Input: []llm.Item{llm.UserText("go")}}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	m.verify(t)
}
