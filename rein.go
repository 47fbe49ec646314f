// Package rein is an agent harness: the runtime around a language model that
// builds its context, offers it tools, runs the calls it makes (in parallel
// where safe), feeds the results back, knows when to stop, and lets a person
// steer, queue or interrupt a turn while it runs.
//
// This package is the facade a library user starts from; the common case
// needs no other import:
//
//	model, err := rein.OpenModel("openai:gpt-5-mini", rein.ModelOptions{Key: key})
//	agent, err := rein.New(rein.Options{Model: model, Tools: []rein.Tool{weather}})
//	thread := agent.NewThread()
//	out, err := thread.Run(ctx, "What is the weather in Shanghai and Beijing?")
//	fmt.Println(out.Status, out.Answer)
//
// An agent runs on the same runtime as every other door of rein (rein run,
// rein chat, rein serve): its threads and turns are held by the session
// scheduler (package session) and set up by the per-thread runtime
// (package agent), so a library turn has the same redaction, pauses,
// steering and interrupts, and with Options.DB the same stored history and
// trace, knowledge seed and OpenTelemetry spans. The engine itself lives in
// package loop, the per-round scheduler in dispatch, the model API in llm,
// and tools in tool and tools/....
package rein

import (
	"context"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// Re-exported names a library user needs without importing the packages
// that define them.
type (
	// Model is a language model (package llm); OpenModel opens one from a
	// spec.
	Model = llm.Model
	// Tool is something the model can call.
	Tool = tool.Tool
	// ToolOutput is what a tool returns to the model.
	ToolOutput = tool.Output
	// ToolOption configures a tool made by NewTool.
	ToolOption = tool.TypedOption
	// Access is a tool's concurrency class: Exclusive (the default),
	// ReadOnly or Mutating.
	Access = tool.Access
	// Outcome is how a turn ended.
	Outcome = loop.Outcome
	// Status says how a turn ended (Outcome.Status).
	Status = loop.Status
	// StopReason says why a turn ended (Outcome.StopReason).
	StopReason = loop.StopReason
	// Event is one event of a turn.
	Event = event.Event
	// EventType names an event (Event.Type).
	EventType = event.Type
	// EventHandler receives a turn's events (Options.Events).
	EventHandler = event.Handler
	// EventFunc adapts a function to an EventHandler.
	EventFunc = event.HandlerFunc
	// Pause is a turn waiting for the user (Outcome.Pause): questions of
	// ask_user, or a call awaiting approval.
	Pause = loop.Pause
	// Answer answers a paused turn (Thread.Answer).
	Answer = loop.Answer
	// QuestionAnswer answers one question of a pause.
	QuestionAnswer = loop.QuestionAnswer
	// Decision answers an approval pause: Approve, ApproveThread or Deny.
	Decision = loop.Decision
	// Waiter answers pauses in process (Options.Waiter).
	Waiter = loop.Waiter
	// Budget holds a turn's optional token, cost and time budgets.
	Budget = loop.Budget
	// Price is a model's price per million tokens.
	Price = loop.Price
)

// Turn statuses (Outcome.Status).
const (
	StatusCompleted   = loop.StatusCompleted
	StatusPaused      = loop.StatusPaused
	StatusInterrupted = loop.StatusInterrupted
	StatusFailed      = loop.StatusFailed
)

// Stop reasons (Outcome.StopReason); README "Stop reasons" says what each
// means.
const (
	StopFinished         = loop.StopFinished
	StopForcedBudget     = loop.StopForcedBudget
	StopForcedTokens     = loop.StopForcedTokens
	StopForcedCost       = loop.StopForcedCost
	StopForcedTime       = loop.StopForcedTime
	StopForcedLoop       = loop.StopForcedLoop
	StopForcedError      = loop.StopForcedError
	StopTerminatedByTool = loop.StopTerminatedByTool
	StopEmptyAnswer      = loop.StopEmptyAnswer
	StopAwaitingUser     = loop.StopAwaitingUser
	StopCancelled        = loop.StopCancelled
	StopProviderError    = loop.StopProviderError
	StopOutputCapped     = loop.StopOutputCapped
)

// Approval decisions (Answer.Decision).
const (
	Approve       = loop.Approve
	ApproveThread = loop.ApproveThread
	Deny          = loop.Deny
)

// Tool access classes (WithAccess).
const (
	Exclusive = tool.Exclusive
	ReadOnly  = tool.ReadOnly
	Mutating  = tool.Mutating
)

// The events a library user most often follows; package event has them all.
const (
	EventTurnStarted    = event.TurnStarted
	EventTurnCompleted  = event.TurnCompleted
	EventRoundStarted   = event.RoundStarted
	EventRoundCompleted = event.RoundCompleted
	EventTextDelta      = event.TextDelta
	EventThinkingDelta  = event.ThinkingDelta
	EventCallCompleted  = event.CallCompleted
	EventToolStarted    = event.ToolStarted
	EventResult         = event.Result
	EventPauseRequested = event.PauseRequested
	EventWarning        = event.Warning
	EventUsage          = event.Usage
)

// NewTool makes a tool from a function of typed arguments: their JSON
// schema comes from In's fields, and a call's arguments are checked against
// it and decoded into In before fn runs (package tool, tool.New).
func NewTool[In any](name, description string, fn func(ctx context.Context, in In) (ToolOutput, error), opts ...ToolOption) Tool {
	return tool.New(name, description, fn, opts...)
}

// WithAccess sets a tool's concurrency class; without it a tool runs alone
// (Exclusive), which is always safe. ReadOnly tools run in parallel.
func WithAccess(a Access) ToolOption { return tool.WithAccess(a) }

// Text is a tool's text output.
func Text(s string) ToolOutput { return tool.Text(s) }
