package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/sandbox"
)

// Options configure the chat.
type Options struct {
	// Model is the model's name, shown in the footer.
	Model string
	// Thread is the thread to resume; empty starts a new one.
	Thread string
	// Now returns the current time (tests); default time.Now.
	Now func() time.Time
	// Workspace is the chat's workspace, read through the sandbox (its
	// deny list holds): @ completes its paths, and the approval box diffs
	// a write against the file. Nil completes nothing and diffs only what
	// the call carries.
	Workspace *sandbox.Workspace
	// Dir is the workspace's directory as the threads record it; /threads
	// lists the threads of this directory. Default: Workspace's.
	Dir string
	// History is the workspace's input history, recalled with Up and
	// Down; nil remembers only this chat's inputs.
	History *History
	// Models are the configured models /model offers, as provider:model.
	Models []string
	// SetModel switches the thread's model for its next turns; nil makes
	// /model say it cannot switch.
	SetModel func(ctx context.Context, threadID, model string) error
	// Undo reverts the files the thread's last turn that changed files
	// wrote and says what it did; nil makes /undo say it is not available.
	// Without force it restores nothing when a file changed after the
	// turn, and returns an error wrapping ErrChangedSince naming them
	// (the chat then offers /undo force).
	Undo func(ctx context.Context, threadID string, force bool) (string, error)
	// Changes is what the thread changed in the workspace, as a unified
	// diff (/diff); nil makes /diff say it is not available.
	Changes func(ctx context.Context, threadID string) (string, error)
	// MCP describes the MCP servers and their tools (/mcp); nil says none
	// are configured.
	MCP func(ctx context.Context) string
	// Command is how the resume hint names the program; default "rein".
	Command string
	// Schema, when set, is the structured answer the chat's turns ask for
	// from the start (rein chat --schema); /schema changes it. The
	// backend must be an OutputBackend.
	Schema *llm.Output
}

// status is what the footer says the thread is doing.
type status string

const (
	statusIdle         status = "idle"
	statusRunning      status = "running"
	statusPaused       status = "paused"
	statusInterrupting status = "interrupting"
)

// Model is the chat's Bubble Tea model. Finished output (prompts, answers,
// tool cards of finished rounds) is printed above the program, into the
// terminal's scrollback; the view holds only what is still changing: the
// round streaming now, a pause card, the input line and the footer.
type Model struct {
	ctx  context.Context
	be   Backend
	opts Options
	now  func() time.Time

	// emptyInput is the empty input box as last drawn (inputView).
	emptyInput emptyInputView

	thread ThreadInfo
	sub    Subscription
	// reading is the subscription a read is in flight for.
	reading Subscription
	// streamAt is when the last events were handed to Update if they
	// streamed text or output, else zero; streamFrom is when the batches
	// streaming without a break began (the wall clock, not Options.Now).
	// Once a stream has lasted a frame, a read that goes on with it is
	// handed over no sooner than a frame after streamAt (waitEvents).
	streamAt, streamFrom time.Time
	input                textarea.Model
	// recall walks the input history with Up and Down.
	recall recall
	// menu is the completion menu open under the input line (slash
	// commands or workspace paths), nil when closed.
	menu *menu
	// walked is the workspace listing @ completes from; walking says a
	// listing is under way.
	walked  *pathCache
	walking bool
	// later are commands the update started that it has not returned yet.
	later  []tea.Cmd
	width  int
	height int

	status status
	// turnID is the running turn; empty when idle.
	turnID string
	// turnStart is when it started, for the footer's timer.
	turnStart time.Time
	round     int
	// last is how the last turn ended (completed, interrupted, failed),
	// shown in the footer until the next turn starts.
	last string

	live  liveRound
	pause *pauseCard
	// steers are steered texts the engine has not read yet; queued are
	// texts queued as next turns, in order.
	steers []pendingSteer
	queued []string

	usage usageTally
	// schema is the structured answer the next turns ask for (/schema);
	// nil asks for text.
	schema *llm.Output
	// lastEsc is when Esc was pressed while a tool ran (the double-Esc
	// rule); zero when not armed.
	lastEsc time.Time
	// lastCtrlC is when Ctrl-C interrupted a turn: a second one within
	// doubleCtrlC quits.
	lastCtrlC time.Time
	// held says the queue waits for the user: the turn before it was
	// interrupted, so the queued texts start only when the user sends or
	// confirms with Enter on an empty line.
	held bool
	// used says the thread has turns, so quitting prints how to resume it.
	used bool
	// expanded shows the approval box's diff whole; folded keeps the last
	// long diff the transcript showed folded, for Ctrl-O to print whole.
	expanded bool
	folded   string
	// before holds, by call id, what an approved write_file call's file
	// held when the approval box showed its diff.
	before map[string]string
	// notice is a one-line hint under the live area, cleared by the next
	// key.
	notice string

	// transcript is everything committed so far, in order; printed counts
	// the blocks already handed to the terminal, and printing says a print
	// is in flight (prints go one at a time so they keep their order).
	transcript []string
	printed    int
	printing   bool
	ticking    bool
	quitting   bool
	// clear asks the next update to clear the screen (/clear).
	clear bool

	md markdown
}

// pendingSteer is a steered text and the id of its item, by which the chat
// knows it when the engine records it.
type pendingSteer struct {
	id, text string
}

// usageTally adds up the thread's tokens and cost: finished turns plus the
// running one (whose usage events are cumulative for the turn).
type usageTally struct {
	before     llm.Usage
	beforeCost float64
	turn       llm.Usage
	turnCost   float64
	// context is the context-window report, when the engine sends one.
	context string
}

func (u *usageTally) total() (llm.Usage, float64) {
	return u.before.Add(u.turn), u.beforeCost + u.turnCost
}

func (u *usageTally) endTurn() {
	u.before, u.beforeCost = u.before.Add(u.turn), u.beforeCost+u.turnCost
	u.turn, u.turnCost = llm.Usage{}, 0
}

// Messages of the model.
type (
	// eventsMsg carries events read from the subscription.
	eventsMsg struct {
		sub    Subscription
		events []event.Event
		err    error
	}
	// printedMsg says the last print reached the terminal.
	printedMsg struct{}
	// tickMsg redraws running cards' elapsed time.
	tickMsg struct{}
)

// New opens the thread (opts.Thread, or a new one), subscribes to its
// events and returns the chat's model. ctx bounds the subscription.
func New(ctx context.Context, be Backend, opts Options) (*Model, error) {
	m := &Model{ctx: ctx, be: be, opts: opts, now: opts.Now, status: statusIdle, width: 80, height: 24, schema: opts.Schema}
	if m.now == nil {
		m.now = time.Now
	}
	m.input = newInput(m.width)
	m.recall.reset(opts.History.Entries())

	var history []llm.Item
	var err error
	if opts.Thread != "" {
		m.thread, history, err = be.Resume(ctx, opts.Thread)
	} else {
		m.thread, err = be.NewThread(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tui: open thread: %w", err)
	}
	m.used = m.thread.Turns > 0
	m.usage.before, m.usage.beforeCost = m.thread.Usage, m.thread.Cost
	if m.thread.Model != "" {
		m.opts.Model = m.thread.Model
	}
	if err := m.subscribe(); err != nil {
		return nil, err
	}
	m.commit(m.styles().dim.Render(fmt.Sprintf("rein chat · %s · thread %s · /help for commands", orDash(opts.Model), m.thread.ID)))
	m.showHistory(history)
	return m, nil
}

// Close ends the model's subscription.
func (m *Model) Close() {
	if m.sub != nil {
		m.sub.Close()
		m.sub = nil
	}
}

func (m *Model) subscribe() error {
	m.Close()
	sub, err := m.be.Subscribe(m.ctx, m.thread.ID)
	if err != nil {
		return fmt.Errorf("tui: subscribe to thread %s: %w", m.thread.ID, err)
	}
	m.sub = sub
	return nil
}

// Init starts reading events.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.waitEvents(), m.flush())
}

// waitEvents reads the next events of the current subscription. The
// command's goroutine ends when events arrive or the subscription closes.
//
// A stream's chunks are handed over at most once a frame: when a batch
// goes on with a stream whose last batch was handed over less than a
// frame ago, it is held until the frame has passed, and what streamed in
// meanwhile joins it. So however fast chunks come, the event loop handles
// (and draws) at most one batch of them a frame, and a key pressed while
// an answer streams waits behind at most one batch, never a queue of chunk
// updates; a busy machine slows the batches, not the keys. A stream's
// first frame is not held (an answer's first words reach the screen as
// soon as they come), nor a batch that starts with anything else (a
// turn's start).
func (m *Model) waitEvents() tea.Cmd {
	sub, ctx := m.sub, m.ctx
	if sub == nil || m.reading == sub {
		return nil
	}
	m.reading = sub
	last, from := m.streamAt, m.streamFrom
	return func() tea.Msg {
		evs, err := sub.Next(ctx)
		if err != nil || last.Sub(from) < time.Second/frameRate || len(evs) == 0 || !streams(evs[:1]) {
			return eventsMsg{sub: sub, events: evs, err: err}
		}
		if wait := time.Until(last.Add(time.Second / frameRate)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			// What is queued now, without waiting: Next with a
			// context already done hands over only that.
			done, cancel := context.WithCancel(ctx)
			cancel()
			if more, err := sub.Next(done); err == nil {
				evs = append(evs, more...)
			}
		}
		return eventsMsg{sub: sub, events: evs}
	}
}

// streams says events carry streamed chunks: text, reasoning, a
// command's output or a call's arguments.
func streams(evs []event.Event) bool {
	for _, e := range evs {
		switch e.Type {
		case event.TextDelta, event.ThinkingDelta, event.ToolOutput, event.CallDelta:
			return true
		}
	}
	return false
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 5)
		m.input.SetWidth(m.width)
	case eventsMsg:
		if msg.sub != m.sub {
			// A subscription of a thread left behind (/new, /resume).
			break
		}
		m.reading = nil
		switch now := time.Now(); {
		case !streams(msg.events):
			m.streamAt, m.streamFrom = time.Time{}, time.Time{}
		case m.streamAt.IsZero():
			m.streamAt, m.streamFrom = now, now
		default:
			m.streamAt = now
		}
		if msg.err != nil {
			if m.ctx.Err() == nil {
				m.commit(m.styles().bad.Render("! events stopped: " + msg.err.Error()))
			}
			break
		}
		for _, e := range msg.events {
			m.apply(e)
		}
	case printedMsg:
		m.printing = false
	case tickMsg:
		m.ticking = false
	case tea.KeyPressMsg:
		cmds = append(cmds, m.key(msg))
	case tea.PasteMsg:
		cmds = append(cmds, m.paste(msg))
	case walkedMsg:
		m.walked, m.walking = msg.c, false
		m.updateMenu()
	}
	cmds = append(cmds, m.later...)
	m.later = nil
	if m.quitting {
		// Print what is left, then stop.
		return m, tea.Sequence(m.flush(), tea.Quit)
	}
	if m.clear {
		m.clear = false
		cmds = append(cmds, tea.ClearScreen)
	}
	// After a thread switch, or the events just handled, read on.
	cmds = append(cmds, m.waitEvents(), m.flush(), m.tick())
	return m, tea.Batch(cmds...)
}

// commit adds a finished block to the transcript; flush prints it.
func (m *Model) commit(block string) {
	m.transcript = append(m.transcript, block)
}

// flush prints the committed blocks not printed yet, one print at a time:
// commands run concurrently, so a second print before the first landed
// could overtake it.
func (m *Model) flush() tea.Cmd {
	if m.printing || m.printed == len(m.transcript) {
		return nil
	}
	text := strings.Join(m.transcript[m.printed:], "\n")
	m.printed = len(m.transcript)
	m.printing = true
	return tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} })
}

// tick keeps the elapsed time of running tools moving while a turn runs.
func (m *Model) tick() tea.Cmd {
	if m.ticking || m.turnID == "" {
		return nil
	}
	m.ticking = true
	return tea.Tick(200*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// Transcript returns the committed blocks, without styling (tests and
// logs).
func (m *Model) Transcript() []string {
	out := make([]string, len(m.transcript))
	for i, b := range m.transcript {
		out[i] = stripANSI(b)
	}
	return out
}

// showHistory replays a resumed thread as it was shown: the user's inputs
// and steers, the assistant's text, each call's card with its result (and
// diff), and the markers of interrupted turns. The engine's directives to
// the model are left out.
func (m *Model) showHistory(items []llm.Item) {
	s := m.styles()
	results := make(map[string]*llm.Result)
	for i := range items {
		for _, p := range items[i].Parts {
			if p.Kind == llm.PartResult && p.Result != nil {
				results[p.Result.CallID] = p.Result
			}
		}
	}
	now := m.now()
	for i := range items {
		it := &items[i]
		switch {
		case it.Role == llm.RoleUser && (it.Origin == llm.OriginInput || it.Origin == llm.OriginSteer):
			m.commit(s.user.Render("› " + printable(it.Text())))
		case it.Origin == llm.OriginMarker:
			if strings.Contains(it.Text(), "interrupted") {
				m.commit(s.warn.Render("■ interrupted"))
			}
		case it.Origin == llm.OriginCompaction:
			m.commit(s.dim.Render("■ compacted: the next turns start from the summary"))
		case it.Role == llm.RoleAssistant:
			var parts []string
			calls := it.Calls()
			if t := strings.TrimSpace(it.Text()); t != "" {
				if len(calls) > 0 {
					parts = append(parts, s.dim.Render(wrap(t, m.width)))
				} else {
					parts = append(parts, m.md.render(t, m.width))
				}
			}
			for _, c := range calls {
				cd := &card{id: c.ID, name: c.Name, args: string(c.Args), state: cardAborted}
				if r := results[c.ID]; r != nil {
					status := string(r.Status)
					if status == "" {
						status = string(llm.ResultOK)
					}
					cd.finish(status, withoutDirectives(r.Content), 0)
					cd.withMetaDiff(r)
				}
				parts = append(parts, cd.render(now, s, m.width))
				if cd.folded() {
					m.folded = cd.diff
				}
			}
			if len(parts) > 0 {
				m.commit(strings.Join(parts, "\n"))
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
