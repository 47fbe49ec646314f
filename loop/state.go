package loop

import (
	"time"

	"github.com/reinhq/rein/llm"
)

// State is a turn in progress: its history and its counters. A paused turn's
// State marshals to JSON so the answer may arrive in another process, after a
// restart (DESIGN §4).
type State struct {
	// Version of the serialized form.
	Version  int    `json:"version"`
	ThreadID string `json:"thread_id,omitempty"`
	TurnID   string `json:"turn_id"`
	// History is the whole context: earlier turns (directives left out) and
	// this turn's items from TurnStart on. While the turn runs, the engine
	// may hold the context's first items apart (prior) and History the
	// rest; a State it hands out (Outcome.State) holds them all again.
	History   []llm.Item `json:"history"`
	TurnStart int        `json:"turn_start"`

	Rounds           int  `json:"rounds"`
	ExplorationRound int  `json:"exploration_rounds"`
	SettlementRounds int  `json:"settlement_rounds"`
	ToolSteps        int  `json:"tool_steps"`
	SettleStarted    bool `json:"settle_started,omitempty"`
	Nudged           bool `json:"nudged,omitempty"`
	// SettleCause is the stop reason a forced finish reports when the turn
	// was moved to settlement early (loop detection).
	SettleCause StopReason `json:"settle_cause,omitempty"`
	// OutputForced: a structured answer in tool mode is asked for with a
	// forced call from now on (the model answered in text, or its call
	// did not match the schema). OutputRepaired: the one repair round of
	// a structured answer was spent.
	OutputForced   bool `json:"output_forced,omitempty"`
	OutputRepaired bool `json:"output_repaired,omitempty"`
	// Output is the structured answer the turn asks for (Options.Output),
	// kept with a paused turn so that whoever resumes it, in this process
	// or another, asks for the same answer (session.Scheduler sets it as
	// the resuming engine's Output).
	Output *llm.Output `json:"output,omitempty"`
	// Continued holds the visible text of truncated rounds, in order.
	Continued []string      `json:"continued,omitempty"`
	Usage     llm.Usage     `json:"usage"`
	Cost      float64       `json:"cost,omitempty"`
	Elapsed   time.Duration `json:"elapsed"`
	// LoopSeen counts identical calls (name, arguments, result) by hash.
	LoopSeen map[uint64]int `json:"loop_seen,omitempty"`
	NextItem int            `json:"next_item"`
	// Pause is what the turn waits for; Pending are the pauses of the same
	// round to present after it (approvals in call order, then ask_user).
	Pause   *Pause  `json:"pause,omitempty"`
	Pending []Pause `json:"pending,omitempty"`
	// Approved are the tools approved for the whole thread.
	Approved []string `json:"approved,omitempty"`

	// prior is the start of the context, held apart from History while
	// the turn runs so that a turn on a long thread need not copy it: a
	// run of the caller's Turn.History (read only, never written or
	// appended to), sent as llm.Request.History. Nil when History holds
	// the whole context; never more than the items before TurnStart.
	prior []llm.Item

	// carry is what the turn hands on to the thread's next one.
	carry carry
}

// stateVersion is the current serialized form.
const stateVersion = 1

// TurnItems returns the items this turn added. The slice has no room
// beyond its items: appending to it never writes the engine's history.
func (s *State) TurnItems() []llm.Item {
	t := s.turn()
	if t < 0 || t > len(s.History) {
		return nil
	}
	return s.History[t:len(s.History):len(s.History)]
}

// size returns the number of items of the context: prior's and History's.
func (s *State) size() int { return len(s.prior) + len(s.History) }

// at returns item i of the context.
func (s *State) at(i int) *llm.Item {
	if i < len(s.prior) {
		return &s.prior[i]
	}
	return &s.History[i-len(s.prior)]
}

// turn returns the index in History of the turn's first item (TurnStart
// counts prior's items too).
func (s *State) turn() int { return s.TurnStart - len(s.prior) }

// fold makes History hold the whole context again, prior's items copied
// in front of its own, for what needs the context as one slice the engine
// owns: a guard shortening an item of prior (which is the caller's), a
// compaction, a State handed out. Indexes into the context, TurnStart
// included, stay what they were.
func (s *State) fold() {
	if len(s.prior) == 0 {
		s.prior = nil
		return
	}
	h := make([]llm.Item, 0, s.size()+turnRoom)
	h = append(append(h, s.prior...), s.History...)
	s.prior, s.History = nil, h
}
