package window

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
)

// keeper is one turn run's context guard (guard.Guard). It counts
// incrementally: the ledger holds every item's count, the system prompt and
// the tool definitions are counted again only when they change.
type keeper struct {
	w   *Window
	led ledger

	system    string
	sysCached bool
	sysSegs   [numSegments]int // the system prompt split into System and the Blocks
	tools     []llm.ToolSpec   // the definitions last counted
	toolsN    int

	// last is the request Fit let through, for Observe.
	last struct {
		ok           bool
		segs         [numSegments]int
		est, reserve int
	}

	// The provider's usage calibrates the estimates: sent tokens were
	// reported for a request estimated at sentEst (measured: of the
	// current history, not compacted since), and ratio is provider tokens
	// per estimated token.
	measured      bool
	sent, sentEst int
	ratio         float64
}

var _ guard.Guard = (*keeper)(nil)

func (w *Window) newGuard() *keeper {
	return &keeper{w: w, led: ledger{k: w.k, classify: w.c.Classify}, ratio: 1}
}

// Fit keeps the request about to be sent under the threshold (guard.Guard):
// first the largest old tool results are shortened, then the history is
// compacted through the model; a request that still does not fit the
// window is refused with llm.ContextWindowExceeded.
func (g *keeper) Fit(ctx context.Context, h guard.History, force bool) error {
	req := h.Request()
	segs, est := g.count(req, h.Edited())
	reserve := g.reserve(req)
	used := g.input(est) + reserve
	limit := int(g.w.c.Threshold * float64(g.w.c.Window))
	if !force && used <= limit {
		g.keep(segs, est, reserve)
		return nil
	}
	if !force {
		n, cut := g.shorten(h, used, limit)
		if n > 0 {
			segs, est = g.count(req, nil)
			used = g.input(est) + reserve
			if used <= limit {
				h.Warn(fmt.Sprintf("shortened %d old tool results (about %d tokens cut) to keep the request under %s of the context window", n, cut, percent(g.w.c.Threshold)))
				g.keep(segs, est, reserve)
				return nil
			}
		}
	}
	if err := g.compact(ctx, h, segs, reserve); err != nil {
		if !force && used <= g.w.c.Window && !isTooBig(err) {
			// The request still fits: better sent than lost to a failed
			// summary.
			h.Warn("compaction failed (" + err.Error() + "); sending the request as it is")
			g.keep(segs, est, reserve)
			return nil
		}
		return err
	}
	segs, est = g.count(h.Request(), nil)
	input := g.input(est)
	if input+reserve > g.w.c.Window {
		return g.tooBig(input, reserve)
	}
	if input+reserve > limit {
		h.Warn(fmt.Sprintf("the request is still above %s of the context window after compaction", percent(g.w.c.Threshold)))
	}
	g.keep(segs, est, reserve)
	return nil
}

// Observe reports the request Fit let through (guard.Guard): the input is
// the provider's count when it reported one, which also calibrates the
// estimates of the requests to come.
func (g *keeper) Observe(u llm.Usage) *event.ContextReport {
	if !g.last.ok {
		return nil
	}
	l := g.last
	g.last.ok = false
	input, source := g.input(l.est), sourceEstimate
	if u.InputTokens > 0 && l.est > 0 {
		input, source = int(u.InputTokens), sourceProvider
		g.measured, g.sent, g.sentEst = true, input, l.est
		// Bounded: a tokenizer is never that far off, so a wilder ratio
		// is overhead the estimate does not see, carried by sent.
		g.ratio = min(max(float64(input)/float64(l.est), 0.5), 2)
	}
	return g.w.report(l.segs, input, l.reserve, source)
}

// count brings the counts up to req and returns its input segments and
// their sum (the estimate).
func (g *keeper) count(req *llm.Request, edited []int) (segs [numSegments]int, est int) {
	g.led.sync(req, edited)
	if !g.sysCached || req.System != g.system {
		g.system, g.sysCached = req.System, true
		g.sysSegs = g.w.systemSegments(req.System)
	}
	if len(req.Tools) != len(g.tools) || len(req.Tools) > 0 && &req.Tools[0] != &g.tools[0] {
		g.tools, g.toolsN = req.Tools, g.w.k.tools(req.Tools)
	}
	segs = g.sysSegs
	segs[Tools] += g.toolsN
	segs[History] += requestOverhead
	for s := range inputSegments {
		segs[s] += g.led.sums[s]
		est += segs[s]
	}
	return segs, est
}

// input returns what the provider will count for a request estimated at
// est: the last reported count plus the scaled estimate of what changed
// since, or the scaled estimate when nothing was reported.
func (g *keeper) input(est int) int {
	if g.measured {
		return max(g.sent+int(g.ratio*float64(est-g.sentEst)), 0)
	}
	return int(g.ratio * float64(est))
}

// reserve returns the room kept for the answer.
func (g *keeper) reserve(req *llm.Request) int {
	if req.MaxOutputTokens > 0 {
		return req.MaxOutputTokens
	}
	return g.w.c.MaxOutput
}

func (g *keeper) keep(segs [numSegments]int, est, reserve int) {
	g.last.ok, g.last.segs, g.last.est, g.last.reserve = true, segs, est, reserve
}

// systemSegments splits the system prompt into its named blocks and the
// rest.
func (w *Window) systemSegments(system string) [numSegments]int {
	var segs [numSegments]int
	if system == "" {
		return segs
	}
	total := itemOverhead + w.k.text(system)
	named := 0
	for _, b := range w.c.Blocks {
		if b.Segment >= inputSegments || b.Segment == Tools || b.Segment == System {
			continue
		}
		n := w.k.text(b.Text)
		segs[b.Segment] += n
		named += n
	}
	segs[System] = max(total-named, 0)
	return segs
}

// tooBig is the error of a request that cannot fit.
func (g *keeper) tooBig(input, reserve int) error {
	name := g.w.c.Model
	if name == "" {
		name = "the model"
	}
	return &llm.Error{Kind: llm.ContextWindowExceeded, Provider: "rein", Message: fmt.Sprintf(
		"the request needs about %d tokens (%d of input and %d kept for the answer) and %s holds %d; it was not sent",
		input+reserve, input, reserve, name, g.w.c.Window)}
}

func isTooBig(err error) bool {
	var e *llm.Error
	return errors.As(err, &e) && e.Kind == llm.ContextWindowExceeded && e.Provider == "rein"
}

func percent(share float64) string { return fmt.Sprintf("%g %%", share*100) }

// lastAssistant returns the index of the request's last assistant item, or
// -1.
func lastAssistant(req *llm.Request) int {
	for i := req.Len() - 1; i >= 0; i-- {
		if req.At(i).Role == llm.RoleAssistant {
			return i
		}
	}
	return -1
}

// sortCandidates orders tool results to shorten: largest first, then
// oldest.
func sortCandidates(c []candidate) {
	slices.SortFunc(c, func(a, b candidate) int {
		if a.tokens != b.tokens {
			return b.tokens - a.tokens
		}
		return a.i - b.i
	})
}
