package window

import (
	"fmt"

	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
)

// candidate is an old tool result the guard may shorten.
type candidate struct{ i, tokens int }

// shorten cuts the largest old tool results — those before the latest
// assistant item, which the model has already read — down to about
// ShortenTo tokens each, largest first, until the request is well under the
// limit (a tenth of the window below it, so the next rounds do not shorten
// again at once). It returns how many it shortened and about how many
// tokens it cut.
func (g *keeper) shorten(h guard.History, used, limit int) (n, cut int) {
	req := h.Request()
	last := lastAssistant(req)
	keep := g.w.c.ShortenTo
	var cands []candidate
	for i := 0; i < last; i++ {
		if req.At(i).Role == llm.RoleTool && int(g.led.tokens[i]) > 2*keep {
			cands = append(cands, candidate{i, int(g.led.tokens[i])})
		}
	}
	sortCandidates(cands)
	target := limit - g.w.c.Window/10
	for _, c := range cands {
		if used <= target {
			break
		}
		it, ok := g.shortened(req, c.i)
		if !ok || h.Shorten(c.i, it) != nil {
			continue
		}
		before := int(g.led.tokens[c.i])
		// Read again: Shorten may have moved the items.
		g.led.set(c.i, req.At(c.i))
		d := before - int(g.led.tokens[c.i])
		used -= int(g.ratio * float64(d))
		n++
		cut += d
	}
	return n, cut
}

// shortened returns the tool result at i cut in the middle, with a marker
// that says how to see it whole again: the same call.
func (g *keeper) shortened(req *llm.Request, i int) (llm.Item, bool) {
	res := req.At(i).Result()
	if res == nil {
		return llm.Item{}, false
	}
	how := "Call " + orTool(res.Name) + " again with the same arguments"
	if c := callOf(req, i, res.CallID); c != nil && len(c.Args) <= 300 {
		how += " (" + c.Args + ")"
	}
	r := *res
	tokens := g.w.k.text(r.Content)
	r.Content = cutMiddle(r.Content, tokens, g.w.c.ShortenTo, func(cut, lines int) string {
		return fmt.Sprintf("\n\n[rein: about %d tokens (%d lines) were cut from the middle of this earlier result to fit the context window. %s to see it whole.]\n\n", cut, lines, how)
	})
	if r.Content == res.Content {
		return llm.Item{}, false
	}
	return llm.ToolResult(r), true
}

// callOf finds the call a result at i answers: in the assistant item
// before it.
func callOf(req *llm.Request, i int, id string) *llm.Call {
	for j := i - 1; j >= 0; j-- {
		it := req.At(j)
		if it.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range it.Calls() {
			if c.ID == id {
				return c
			}
		}
		return nil
	}
	return nil
}

func orTool(name string) string {
	if name == "" {
		return "the tool"
	}
	return name
}
