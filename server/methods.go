package server

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/protocol"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// Limits of thread/list.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// decode reads a method's params; absent params decode as the zero value.
func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 || string(raw) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, invalidParams("the params do not decode: %v", err)
	}
	return v, nil
}

// need reports the first empty required field.
func need(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return invalidParams("%s is required", fields[i])
		}
	}
	return nil
}

func (c *conn) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	if _, err := decode[protocol.InitializeParams](raw); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initialized {
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "already initialized", Data: &protocol.ErrorData{Kind: "alreadyInitialized"}}
	}
	c.initialized = true
	return protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: c.s.c.Name, Version: c.s.c.Version}, ProtocolVersion: protocol.ProtocolVersion, Defaults: c.defaults(ctx)}, nil
}

func (c *conn) threadStart(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadStartParams](raw)
	if err != nil {
		return nil, err
	}
	if err := checkClientModel(p.Model); err != nil {
		return nil, err
	}
	out, err := turnOutput(p.Output)
	if err != nil {
		return nil, err
	}
	cfg := session.ThreadConfig{
		Workspace: p.Workspace, Model: p.Model, Instructions: p.Instructions,
		EnableTools: p.EnableTools, DisableTools: p.DisableTools, ForceTools: p.ForceTools,
		Approval: p.Approval, Sandbox: p.Sandbox, MaxRounds: p.MaxRounds,
	}
	if cfg.KBs, err = c.checkKBs(ctx, p.KnowledgeBases); err != nil {
		return nil, err
	}
	if out != nil {
		cfg.Output = out.Schema
	}
	if check := c.s.c.CheckThread; check != nil {
		if err := check(cfg); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	// A thread the connection could not watch is not made at all.
	if err := c.roomToWatch(); err != nil {
		return nil, err
	}
	th, err := c.s.c.Sessions.CreateOwnedThread(ctx, cfg, c.who.name)
	if err != nil {
		return nil, err
	}
	c.mine.add(th.ID)
	if err := c.watch(ctx, th.ID); err != nil {
		return nil, err
	}
	return protocol.ThreadResult{Thread: protocol.ThreadOf(th)}, nil
}

func (c *conn) threadResume(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadResumeParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	th, err := c.s.c.Sessions.ResumeThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if err := c.watch(ctx, th.ID); err != nil {
		return nil, err
	}
	return protocol.ThreadResult{Thread: protocol.ThreadOf(th)}, nil
}

func (c *conn) threadList(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadListParams](raw)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	if len(p.Query) > record.MaxThreadSearch {
		return nil, invalidParams("query is %d bytes; give at most %d", len(p.Query), record.MaxThreadSearch)
	}
	ths, next, err := c.s.c.Sessions.FindThreads(ctx, session.ThreadQuery{
		Limit: limit, Cursor: p.Cursor, Owned: !c.who.admin(), Owner: c.who.name, Search: p.Query,
		Children: p.IncludeChildren,
	})
	if err != nil {
		return nil, err
	}
	out := protocol.ThreadListResult{Threads: make([]protocol.Thread, 0, len(ths)), NextCursor: next}
	for _, th := range ths {
		out.Threads = append(out.Threads, protocol.ThreadOf(th))
	}
	return out, nil
}

func (c *conn) threadRead(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadReadParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	snap, err := c.s.c.Sessions.ReadThread(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	out := protocol.ReadOf(snap.Thread, snap.Turns, snap.Items)
	kids, err := c.s.c.Sessions.ListChildren(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		out.Children = append(out.Children, protocol.ThreadOf(k))
	}
	out.Context = c.s.contexts.get(p.ThreadID)
	return out, nil
}

// input converts the parts of a user's input to one user item.
func input(parts []protocol.InputPart) (llm.Item, error) {
	if len(parts) == 0 {
		return llm.Item{}, invalidParams("input is empty; send at least one part")
	}
	it := llm.Item{Role: llm.RoleUser}
	files := 0
	for i, p := range parts {
		switch p.Type {
		case "text":
			it.Parts = append(it.Parts, llm.Part{Kind: llm.PartText, Text: p.Text})
		case protocol.InputFile:
			if files++; files > protocol.MaxAttachments {
				return llm.Item{}, invalidParams("input has more than %d attached files; attach fewer", protocol.MaxAttachments)
			}
			t, err := attachment(i, p)
			if err != nil {
				return llm.Item{}, err
			}
			it.Parts = append(it.Parts, llm.Part{Kind: llm.PartText, Text: t})
		default:
			return llm.Item{}, invalidParams("input[%d] has type %q; the supported types are text and file", i, p.Type)
		}
	}
	return it, nil
}

func (c *conn) turnStart(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.TurnStartParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.checkThreadKBs(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	in, err := input(p.Input)
	if err != nil {
		return nil, err
	}
	out, err := turnOutput(p.Output)
	if err != nil {
		return nil, err
	}
	// Watch first, so that the connection sees turn/started.
	if err := c.watch(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	t, err := c.s.c.Sessions.StartOutput(ctx, p.ThreadID, in, out)
	if err != nil {
		return nil, err
	}
	return protocol.TurnStartResult{Turn: protocol.TurnOf(&t)}, nil
}

func (c *conn) threadCompact(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ThreadCompactParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	if err := c.watch(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	t, err := c.s.c.Sessions.Compact(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	return protocol.TurnStartResult{Turn: protocol.TurnOf(&t)}, nil
}

func (c *conn) turnSteer(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.TurnSteerParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID, "expectedTurnId", p.ExpectedTurnID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	in, err := input(p.Input)
	if err != nil {
		return nil, err
	}
	id, err := c.s.c.Sessions.Steer(ctx, p.ThreadID, p.ExpectedTurnID, in)
	if err != nil {
		return nil, err
	}
	return protocol.TurnSteerResult{TurnID: p.ExpectedTurnID, ItemID: id}, nil
}

func (c *conn) turnInterrupt(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.TurnInterruptParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID, "turnId", p.TurnID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	return protocol.EmptyResult{}, c.s.c.Sessions.Interrupt(ctx, p.ThreadID, p.TurnID)
}

func (c *conn) pauseAnswer(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.PauseAnswerParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID, "turnId", p.TurnID, "callId", p.CallID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	a := loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Text: p.Text}
	for _, qa := range p.Answers {
		a.Answers = append(a.Answers, loop.QuestionAnswer{QuestionID: qa.QuestionID, Text: qa.Text})
	}
	if err := c.watch(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	return protocol.EmptyResult{}, c.s.c.Sessions.Answer(ctx, p.ThreadID, a)
}

func (c *conn) approvalAnswer(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := decode[protocol.ApprovalAnswerParams](raw)
	if err != nil {
		return nil, err
	}
	if err := need("threadId", p.ThreadID, "turnId", p.TurnID, "callId", p.CallID); err != nil {
		return nil, err
	}
	if err := c.mayUse(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	var d loop.Decision
	switch p.Decision {
	case protocol.DecisionApprove:
		d = loop.Approve
	case protocol.DecisionApproveThread:
		d = loop.ApproveThread
	case protocol.DecisionDeny:
		d = loop.Deny
	default:
		return nil, invalidParams("decision %q: use approve, approveThread or deny", p.Decision)
	}
	if err := c.watch(ctx, p.ThreadID); err != nil {
		return nil, err
	}
	return protocol.EmptyResult{}, c.s.c.Sessions.Answer(ctx, p.ThreadID, loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Decision: d, Text: p.Text})
}
