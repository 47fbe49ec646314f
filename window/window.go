package window

import (
	"errors"
	"fmt"

	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
)

// Defaults of a Window (DESIGN §8).
const (
	DefaultThreshold        = 0.9
	DefaultResultCap        = 10_000
	DefaultShortenTo        = 1_000
	DefaultSummaryMaxOutput = 8_192
	DefaultKeepUserTokens   = 20_000
	// DefaultReserve is the answer's room when neither the request nor the
	// configuration names an output limit.
	DefaultReserve = 4_096
)

// Config describes the model whose window is kept. Window is required;
// everything else has a working zero value.
type Config struct {
	// Model is the model's name: it picks the tokenizer and names the
	// model in reports.
	Model string
	// Window is the model's context window in tokens (input plus output).
	Window int
	// WindowEstimated says Window is a guess.
	WindowEstimated bool
	// MaxOutput is the model's most output tokens per call: the room kept
	// for the answer when a request sets no MaxOutputTokens (default
	// DefaultReserve).
	MaxOutput int
	// Counter counts tokens; nil picks one by model family (CounterFor).
	// CounterExact says a given Counter is the model's own tokenizer.
	Counter      Counter
	CounterExact bool
	// Threshold is the share of the window past which the guard acts
	// before a request (default 0.9).
	Threshold float64
	// ResultCap is the most tokens a tool result keeps when it is recorded
	// (default 10,000; negative: no cap).
	ResultCap int
	// ShortenTo is about how many tokens an old tool result keeps when the
	// guard shortens it (default 1,000).
	ShortenTo int
	// SummaryMaxOutput caps the handoff summary's length (default 8,192).
	SummaryMaxOutput int
	// KeepUserTokens bounds the user's earlier messages quoted verbatim in a
	// compaction (default 20,000); the current turn's are always quoted.
	KeepUserTokens int
	// Blocks name parts of the system prompt for the report.
	Blocks []Block
	// Classify puts an item in a segment (History, ToolResults, Knowledge,
	// Memory, …); nil puts tool results in ToolResults and the rest in
	// History.
	Classify func(*llm.Item) Segment
}

// Window keeps requests to one model within its context window. It
// implements guard.Window (loop.Options.Window); one Window serves any
// number of turns at once.
type Window struct {
	c     Config
	exact bool
	k     *costs
}

var _ guard.Window = (*Window)(nil)

// New returns a Window, or an error saying which setting is wrong.
func New(c Config) (*Window, error) {
	if c.Window <= 0 {
		return nil, errors.New("window: Config.Window is not set; give the model's context window in tokens")
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.Threshold <= 0 || c.Threshold > 1 {
		return nil, fmt.Errorf("window: Threshold %g is out of range; use a share of the window in (0, 1]", c.Threshold)
	}
	if c.MaxOutput < 0 || c.ShortenTo < 0 || c.SummaryMaxOutput < 0 || c.KeepUserTokens < 0 {
		return nil, errors.New("window: MaxOutput, ShortenTo, SummaryMaxOutput and KeepUserTokens must not be negative")
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = DefaultReserve
	}
	if c.ResultCap == 0 {
		c.ResultCap = DefaultResultCap
	}
	if c.ShortenTo == 0 {
		c.ShortenTo = DefaultShortenTo
	}
	if c.SummaryMaxOutput == 0 {
		c.SummaryMaxOutput = DefaultSummaryMaxOutput
	}
	if c.KeepUserTokens == 0 {
		c.KeepUserTokens = DefaultKeepUserTokens
	}
	if c.Classify == nil {
		c.Classify = classify
	}
	w := &Window{c: c, exact: c.CounterExact}
	if c.Counter == nil {
		c.Counter, w.exact = CounterFor(c.Model)
		w.c.Counter = c.Counter
	}
	w.k = newCosts(c.Counter)
	return w, nil
}

// Guard returns the guard of one turn run (guard.Window).
func (w *Window) Guard() guard.Guard { return w.newGuard() }

// ReadsHistory implements llm.HistoryReader: the guard counts, shortens
// and compacts the request's History and Items alike.
func (w *Window) ReadsHistory() bool { return true }

// Estimated reports whether the window or the counter is a guess.
func (w *Window) Estimated() bool {
	return w.c.WindowEstimated || !w.exact || w.c.Counter.Name() == Heuristic
}

// Count returns the tokens of a text with the window's counter.
func (w *Window) Count(text string) int { return w.k.text(text) }
