package loop

import (
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// Defaults of the caps on one model call (DESIGN §12 "Bounded"). A model
// answering in good faith stays far below them — the largest round in the
// recorded provider traffic is a few hundred kilobytes — while a stream that
// never ends is cut within a few megabytes instead of filling memory.
const (
	// DefaultMaxRoundOutput caps what one model call may stream: some
	// eight times the longest output a model writes in one call (128k
	// tokens, about 512 KiB).
	DefaultMaxRoundOutput = 4 << 20
	// DefaultMaxCallArgs caps the arguments of one call.
	DefaultMaxCallArgs = 1 << 20
	// callOverhead is what each call counts against MaxRoundOutput besides
	// its name and arguments, so that a flood of empty calls is cut too.
	callOverhead = 256
	// maxKeptOfCut is how much of a capped round's text its history item
	// keeps: the whole of it would make every later request of the thread
	// too big for the model's window.
	maxKeptOfCut = 16 << 10
)

// The forced final round that a spent time budget leads to gets a tenth of
// the budget, within these bounds, before it is cut as well.
const (
	minFinalGrace = time.Second
	maxFinalGrace = 30 * time.Second
)

// The caps CapError names.
const (
	CapRoundOutput = "round_output"
	CapCallArgs    = "call_arguments"
)

// CapError is the error of a turn whose model passed a cap on one call's
// output (stop reason output_capped): the stream was cut there and closed, so
// the provider stopped sending. What arrived before the cut is kept in the
// history; a call whose arguments were cut never ran and is not recorded.
type CapError struct {
	// Cap is CapRoundOutput or CapCallArgs.
	Cap string
	// Limit is the cap, in bytes.
	Limit int64
	// Call names the call whose arguments passed CapCallArgs.
	Call string
}

func (e *CapError) Error() string {
	if e.Cap == CapCallArgs {
		name := ""
		if e.Call != "" {
			name = " to " + e.Call
		}
		return fmt.Sprintf("the arguments of a call%s passed the cap of %s per call; the model's stream was cut there. "+
			"If such arguments are expected, raise max_call_arguments in the [stream] table of the config file (loop.Options.MaxCallArgs)", name, formatBytes(e.Limit))
	}
	return fmt.Sprintf("the model's output passed the cap of %s per round (text, reasoning and call arguments); the stream was cut there. "+
		"If such output is expected, raise max_round_output in the [stream] table of the config file (loop.Options.MaxRoundOutput)", formatBytes(e.Limit))
}

// ErrTimeBudget is the error of a turn whose time budget ran out and whose
// forced final round gave no answer before it was cut as well (stop reason
// forced_time).
var ErrTimeBudget = errors.New("the time budget ran out before the model answered; raise the budget (--timeout) or ask for less")

// errDeadline is the cause of a stream cut at the turn's deadline, which
// tells it from the caller's own cancellation.
var errDeadline = errors.New("loop: the turn's time budget ran out")

// keptOfCut is what the history keeps of a capped round's text: its start,
// cut at a character boundary, and a note saying why the rest is missing.
func keptOfCut(text string, err error) string {
	if len(text) <= maxKeptOfCut {
		return text
	}
	n := maxKeptOfCut
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + fmt.Sprintf("\n\n[rein: the rest of this reply, %s in all, was dropped: %v]", formatBytes(int64(len(text))), err)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// meter counts one round's output against the caps. Each check is O(1) and
// allocates nothing for calls the adapters number 0, 1, 2, …; its array is
// the run's, reused round after round.
type meter struct {
	out, maxOut int64
	maxArgs     int64
	args        []int64       // argument bytes by call index
	far         map[int]int64 // for indexes args does not reach
	// names are the calls' names by index, for the error; the last one
	// announced stands for an index out of the array's reach.
	names []string
	last  string
	// nameRoom is names' first room: a round of a call or two needs no
	// more.
	nameRoom [2]string
}

// maxNear is how many call indexes the meter's array covers; a higher one
// (from a model that numbers calls its own way) is counted in a map.
const maxNear = 1024

// reset starts a round.
func (m *meter) reset(maxOut, maxArgs int64) {
	m.out, m.maxOut, m.maxArgs = 0, maxOut, maxArgs
	m.args = m.args[:0]
	m.far = nil
	m.names = m.names[:0]
	m.last = ""
}

// output counts n bytes of text, reasoning or arguments; it reports whether
// the round passed its cap.
func (m *meter) output(n int) bool {
	m.out += int64(n)
	return m.maxOut > 0 && m.out > m.maxOut
}

// call counts the announcement of call index.
func (m *meter) call(index int, name string) bool {
	m.last = name
	if index >= 0 && index < maxNear {
		if m.names == nil {
			m.names = m.nameRoom[:0]
		}
		for len(m.names) <= index {
			m.names = append(m.names, "")
		}
		m.names[index] = name
	}
	return m.output(len(name) + callOverhead)
}

// name returns the name of call index, as announced.
func (m *meter) name(index int) string {
	if index >= 0 && index < len(m.names) {
		return m.names[index]
	}
	return m.last
}

// arg counts n bytes of the arguments of call index; it reports whether the
// call passed its cap.
func (m *meter) arg(index, n int) bool {
	var total int64
	switch {
	case index >= 0 && index < maxNear:
		for len(m.args) <= index {
			m.args = append(m.args, 0)
		}
		m.args[index] += int64(n)
		total = m.args[index]
	default:
		if m.far == nil {
			m.far = make(map[int]int64)
		}
		m.far[index] += int64(n)
		total = m.far[index]
	}
	return m.maxArgs > 0 && total > m.maxArgs
}

// counted returns the argument bytes counted for call index.
func (m *meter) counted(index int) int64 {
	if index >= 0 && index < len(m.args) {
		return m.args[index]
	}
	return m.far[index]
}

// done checks a complete call, whose arguments a stream may deliver whole
// instead of in counted fragments: what was not counted yet counts now.
func (m *meter) done(index int, c *llm.Call) *CapError {
	n := int64(len(c.Args))
	if m.maxArgs > 0 && n > m.maxArgs {
		return &CapError{Cap: CapCallArgs, Limit: m.maxArgs, Call: c.Name}
	}
	if extra := n - m.counted(index); extra > 0 && m.output(int(extra)) {
		return &CapError{Cap: CapRoundOutput, Limit: m.maxOut}
	}
	return nil
}

// response checks the calls of a complete response, for a model that
// never announced them as complete.
func (m *meter) response(resp *llm.Response) *CapError {
	if resp == nil || m.maxArgs <= 0 {
		return nil
	}
	for _, p := range resp.Parts {
		if p.Kind == llm.PartCall && p.Call != nil && int64(len(p.Call.Args)) > m.maxArgs {
			return &CapError{Cap: CapCallArgs, Limit: m.maxArgs, Call: p.Call.Name}
		}
	}
	return nil
}

// collect reads a stream to its end, as llm.Collect does, within the caps
// of one round; it closes the stream.
func collect(s llm.Stream, maxOut, maxArgs int64) (*llm.Response, error) {
	defer s.Close()
	var m meter
	m.reset(maxOut, maxArgs)
	var resp *llm.Response
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			if resp == nil {
				return nil, &llm.Error{Kind: llm.StreamInterrupted, Message: "stream ended without a done event"}
			}
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		var e *CapError
		switch ev.Kind {
		case llm.EventText, llm.EventReasoning:
			if m.output(len(ev.Delta)) {
				e = &CapError{Cap: CapRoundOutput, Limit: m.maxOut}
			}
		case llm.EventCallStart:
			if ev.Call != nil && m.call(ev.Index, ev.Call.Name) {
				e = &CapError{Cap: CapRoundOutput, Limit: m.maxOut}
			}
		case llm.EventCallDelta:
			if m.output(len(ev.Delta)) {
				e = &CapError{Cap: CapRoundOutput, Limit: m.maxOut}
			} else if m.arg(ev.Index, len(ev.Delta)) {
				e = &CapError{Cap: CapCallArgs, Limit: m.maxArgs, Call: m.name(ev.Index)}
			}
		case llm.EventCallDone:
			if ev.Call != nil {
				e = m.done(ev.Index, ev.Call)
			}
		case llm.EventDone:
			resp = ev.Response
			e = m.response(resp)
		}
		if e != nil {
			return nil, e
		}
	}
}
