package server

import (
	"fmt"
	"github.com/reinhq/rein/protocol"
	"strconv"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// notifier turns one thread's events into notifications for one
// connection. It keeps what the item lifecycle needs: which streamed items
// were started, so that every item goes item/started, item/delta …,
// item/completed.
type notifier struct {
	send func(method string, params any)
	// stream is the streaming id of the agent message of the round being
	// read, "" until its first delta.
	stream string
	// calls are the round's call ids by index (argument deltas carry the
	// index only).
	calls map[int]string
	// tools are the streaming ids of results whose tools run, by call id.
	tools map[string]string
	// done are the ids of the turn's items already completed: a pause's
	// answer replaces its placeholder, which is then completed again, not
	// started again.
	done map[string]bool
	// onContext, when not nil, is told each context report (the server
	// remembers the latest for thread/read).
	onContext func(thread string, r *event.ContextReport)
}

func newNotifier(send func(string, any)) *notifier {
	return &notifier{send: send, calls: make(map[int]string), tools: make(map[string]string), done: make(map[string]bool)}
}

// streamID is the id item/started and item/delta use for the agent message
// of round n before it is stored under its own id.
func streamID(turnID string, round int) string { return turnID + ":round" + strconv.Itoa(round) }

// toolStreamID is the id of a result while its tool runs.
func toolStreamID(turnID, callID string) string { return turnID + ":call:" + callID }

func (n *notifier) handle(e event.Event) {
	switch e.Type {
	case event.TurnStarted:
		n.stream = ""
		clear(n.calls)
		clear(n.tools)
		clear(n.done)
		n.send(protocol.NotifyTurnStarted, protocol.TurnNotification{ThreadID: e.ThreadID, Turn: protocol.Turn{ID: e.TurnID, ThreadID: e.ThreadID, Status: protocol.StatusInProgress}})
	case event.TurnCompleted:
		t := protocol.Turn{ID: e.TurnID, ThreadID: e.ThreadID, Status: e.Status, StopReason: e.Code}
		if s := e.Turn; s != nil {
			t.Answer, t.Rounds, t.SettlementRounds, t.ToolSteps = s.Answer, s.Rounds, s.SettlementRounds, s.ToolSteps
			t.Usage, t.Cost, t.Error = protocol.UsageOf(s.Usage), s.Cost, s.Error
			t.Output = s.Output
		}
		n.send(protocol.NotifyTurnCompleted, protocol.TurnNotification{ThreadID: e.ThreadID, Turn: t})
	case event.RoundStarted:
		n.stream = ""
		clear(n.calls)
	case event.TextDelta:
		n.delta(e, protocol.DeltaText, "")
	case event.ThinkingDelta:
		n.delta(e, protocol.DeltaThinking, "")
	case event.CallStarted:
		n.calls[e.Index] = e.CallID
		n.begin(e)
	case event.CallDelta:
		id := e.CallID
		if id == "" {
			id = n.calls[e.Index]
		}
		n.delta(e, protocol.DeltaArguments, id)
	case event.ToolStarted:
		id := toolStreamID(e.TurnID, e.CallID)
		n.tools[e.CallID] = id
		n.send(protocol.NotifyItemStarted, protocol.ItemNotification{ThreadID: e.ThreadID, TurnID: e.TurnID, Item: protocol.Item{
			ID: id, TurnID: e.TurnID, Type: protocol.ItemToolResult, Status: protocol.StatusInProgress,
			Result: &protocol.Result{CallID: e.CallID, Name: e.Name, Arguments: e.Args},
		}})
	case event.ItemAdded:
		if e.Item != nil {
			n.item(e, e.Item)
		}
	case event.PauseRequested:
		n.pause(e)
	case event.Usage:
		if e.Usage != nil {
			n.send(protocol.NotifyUsageUpdated, protocol.UsageUpdated{ThreadID: e.ThreadID, TurnID: e.TurnID, Round: e.Round, Usage: protocol.UsageOf(*e.Usage), Cost: e.Cost})
		}
	case event.Context:
		if e.Context != nil {
			if n.onContext != nil {
				n.onContext(e.ThreadID, e.Context)
			}
			n.send(protocol.NotifyContextUpdated, protocol.ContextUpdated{ThreadID: e.ThreadID, TurnID: e.TurnID, Context: e.Context})
		}
	case event.Warning:
		w := protocol.Warning{ThreadID: e.ThreadID, TurnID: e.TurnID, Code: e.Code, Message: e.Content}
		if d, ok := e.Extra["dropped"].(int); ok {
			w.Dropped = int64(d)
		}
		n.send(protocol.NotifyWarning, w)
	case event.Subagent:
		if p, ok := subagentParams(e); ok {
			n.send(protocol.NotifySubagent, p)
		}
	case event.Retry:
		n.send(protocol.NotifyWarning, protocol.Warning{ThreadID: e.ThreadID, TurnID: e.TurnID, Code: "retry",
			Message: fmt.Sprintf("retrying the model call (%d of %d): %s", e.Attempt, e.Max, e.Content)})
	}
}

// begin sends item/started for the round's agent message unless it was.
func (n *notifier) begin(e event.Event) {
	if n.stream != "" {
		return
	}
	n.stream = streamID(e.TurnID, e.Round)
	n.send(protocol.NotifyItemStarted, protocol.ItemNotification{ThreadID: e.ThreadID, TurnID: e.TurnID, Item: protocol.Item{
		ID: n.stream, TurnID: e.TurnID, Type: protocol.ItemAgentMessage, Status: protocol.StatusInProgress,
	}})
}

func (n *notifier) delta(e event.Event, kind protocol.DeltaKind, callID string) {
	n.begin(e)
	n.send(protocol.NotifyItemDelta, protocol.ItemDelta{ThreadID: e.ThreadID, TurnID: e.TurnID, ItemID: n.stream, Kind: kind, Delta: e.Delta, CallID: callID})
}

// item completes a stored item, starting it first when nothing streamed.
func (n *notifier) item(e event.Event, it *llm.Item) {
	w := protocol.ItemOf(it)
	started := ""
	switch it.Role {
	case llm.RoleAssistant:
		started, n.stream = n.stream, ""
	case llm.RoleTool:
		if r := it.Result(); r != nil {
			started = n.tools[r.CallID]
			delete(n.tools, r.CallID)
		}
	}
	if started == "" && !n.done[w.ID] {
		n.send(protocol.NotifyItemStarted, protocol.ItemNotification{ThreadID: e.ThreadID, TurnID: e.TurnID, Item: w})
	} else if started != w.ID {
		w.StreamID = started
	}
	n.done[w.ID] = true
	n.send(protocol.NotifyItemCompleted, protocol.ItemNotification{ThreadID: e.ThreadID, TurnID: e.TurnID, Item: w})
}

func (n *notifier) pause(e event.Event) {
	p := e.Pause
	if p == nil {
		return
	}
	if p.Kind == tool.PauseApproval {
		n.send(protocol.NotifyApprovalRequested, protocol.ApprovalRequested{ThreadID: e.ThreadID, TurnID: e.TurnID, CallID: e.CallID, Tool: e.Name, Arguments: e.Args, Reason: p.Intro})
		return
	}
	n.send(protocol.NotifyPauseRequested, protocol.PauseRequested{ThreadID: e.ThreadID, TurnID: e.TurnID, CallID: e.CallID, Tool: e.Name, Intro: p.Intro, Questions: protocol.QuestionsOf(p.Questions)})
}
