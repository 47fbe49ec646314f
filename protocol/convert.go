package protocol

import (
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tool"
)

// The records of package record on the wire. They are the one place the
// protocol's spelling of a record is decided: camelCase fields, and a
// running turn's status spelled inProgress.

// StatusInProgress is how the protocol spells record.StatusRunning.
const StatusInProgress = "inProgress"

// StatusOf is a turn status on the wire.
func StatusOf(s record.Status) string {
	if s == record.StatusRunning {
		return StatusInProgress
	}
	return string(s)
}

// ThreadOf is a thread on the wire.
func ThreadOf(th record.Thread) Thread {
	c := th.Settings
	var parent *ThreadLink
	if !th.Parent.IsZero() {
		parent = &ThreadLink{ThreadID: th.Parent.ThreadID, TurnID: th.Parent.TurnID, CallID: th.Parent.CallID}
	}
	return Thread{
		Parent: parent,
		ID:     th.ID, Workspace: c.Workspace, Model: c.Model, Instructions: c.Instructions,
		EnableTools: c.EnableTools, DisableTools: c.DisableTools, ForceTools: c.ForceTools, Approval: c.Approval, Sandbox: c.Sandbox, MaxRounds: c.MaxRounds,
		Approved: c.Approved, CreatedAt: th.Created, UpdatedAt: th.Updated, Title: th.Title, TurnCount: th.Turns, Output: c.Output, Owner: th.Owner,
		KnowledgeBases: c.KBs,
	}
}

// ReadOf is a thread read whole on the wire: the thread, its turns and
// its items in history order.
func ReadOf(th record.Thread, turns []record.Turn, items []llm.Item) ThreadReadResult {
	out := ThreadReadResult{Thread: ThreadOf(th), Turns: turnsOf(turns), Items: make([]Item, 0, len(items))}
	for i := range items {
		out.Items = append(out.Items, ItemOf(&items[i]))
	}
	return out
}

// TurnOf is a turn on the wire.
func TurnOf(t *record.Turn) Turn {
	return Turn{
		ID: t.ID, ThreadID: t.ThreadID, Status: StatusOf(t.Status), StopReason: string(t.StopReason), Answer: t.Answer,
		Rounds: t.Rounds, SettlementRounds: t.SettlementRounds, ToolSteps: t.ToolSteps,
		Usage: UsageOf(t.Usage), Cost: t.Cost, Error: t.Error, Pause: pauseOf(t), Output: t.Output,
	}
}

// pauseOf is what a paused turn waits for on the wire; nil for a turn that
// is not paused.
func pauseOf(t *record.Turn) *TurnPause {
	p := t.Pause
	if p == nil || t.Status != record.StatusPaused {
		return nil
	}
	if p.Kind == tool.PauseApproval {
		return &TurnPause{Kind: PauseKindApproval, CallID: p.CallID, Tool: p.Tool, Arguments: p.Args, Reason: p.Intro}
	}
	return &TurnPause{Kind: PauseKindQuestion, CallID: p.CallID, Tool: p.Tool, Intro: p.Intro, Questions: QuestionsOf(p.Questions)}
}

// QuestionsOf is a pause's questions on the wire.
func QuestionsOf(qs []tool.Question) []Question {
	out := make([]Question, 0, len(qs))
	for _, q := range qs {
		w := Question{ID: q.ID, Prompt: q.Prompt, Header: q.Header, MultiSelect: q.MultiSelect, AllowFreeText: q.AllowFreeText}
		for _, o := range q.Options {
			w.Options = append(w.Options, Option{Label: o.Label, Description: o.Description})
		}
		out = append(out, w)
	}
	return out
}

// UsageOf is a model usage on the wire.
func UsageOf(u llm.Usage) Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens}
}

// ItemOf is a history item on the wire: a completed item.
func ItemOf(it *llm.Item) Item {
	w := Item{ID: it.ID, TurnID: it.TurnID, Origin: it.Origin.String(), Status: "completed"}
	switch it.Role {
	case llm.RoleAssistant:
		w.Type = ItemAgentMessage
	case llm.RoleTool:
		w.Type = ItemToolResult
	default:
		w.Type = ItemUserMessage
	}
	for _, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			w.Text += p.Text
		case llm.PartReasoning:
			w.Thinking += p.Text
		case llm.PartCall:
			if p.Call != nil {
				w.Calls = append(w.Calls, Call{ID: p.Call.ID, Name: p.Call.Name, Arguments: p.Call.Args})
			}
		case llm.PartResult:
			if r := p.Result; r != nil {
				w.Result = &Result{CallID: r.CallID, Name: r.Name, Content: r.Content, Status: string(r.Status)}
			}
		}
	}
	return w
}

// ThreadExport is a thread as `rein sessions show --json` prints it: the
// thread and its turns as the protocol spells them, and its items whole,
// in their stored form (llm.Item), for a tool that replays or checks the
// history; Item, which thread/read answers, is a view of one.
type ThreadExport struct {
	Thread Thread     `json:"thread"`
	Turns  []Turn     `json:"turns"`
	Items  []llm.Item `json:"items"`
}

// ExportOf is a thread with its turns and items, for ThreadExport.
func ExportOf(th record.Thread, turns []record.Turn, items []llm.Item) ThreadExport {
	out := ThreadExport{Thread: ThreadOf(th), Turns: turnsOf(turns), Items: items}
	if out.Items == nil {
		out.Items = []llm.Item{}
	}
	return out
}

// turnsOf is turns on the wire, in their order.
func turnsOf(turns []record.Turn) []Turn {
	out := make([]Turn, 0, len(turns))
	for i := range turns {
		out = append(out, TurnOf(&turns[i]))
	}
	return out
}
