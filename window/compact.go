package window

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/guard"
	"github.com/reinhq/rein/llm"
)

// summaryPrompt asks the model for the handoff summary (DESIGN §8): what
// users of other harnesses lost in compaction — the task, finished work,
// decisions, constraints, the next step — is asked for by name.
const summaryPrompt = "[rein] Context checkpoint. This conversation is about to be compacted to fit the model's context window: " +
	"your reply will replace everything above for the model that carries on the work. It will also see the user's messages " +
	"verbatim and the latest tool calls with their results, but nothing else from above. Write a handoff summary for it " +
	"with these sections:\n" +
	"Goal: what the user asked for, in their terms, including the request being worked on now.\n" +
	"Progress: what has been done and found, with the concrete facts the work depends on (paths, names, numbers, commands, results).\n" +
	"Decisions: what was decided and why, and what was tried and did not work.\n" +
	"Constraints: the user's requirements, preferences and rules to keep following.\n" +
	"Remaining: what is left to do, the next step first.\n" +
	"Be specific and complete. Do not call tools and do not address the user."

// compactionHeader opens a compaction item; quotePrefix opens each quoted
// user message, so a later compaction can quote them again.
const (
	compactionHeader = "[rein] Context checkpoint: the conversation before this point was compacted to fit the model's context window. " +
		"This handoff summary was written then; the user's messages follow verbatim, the last of them the request being worked on. " +
		"Carry on from here: do not redo finished work, and check the current state before repeating an action.\n\n"
	quotePrefix = "[rein] The user wrote (quoted verbatim from before the checkpoint):\n"
)

// compact replaces the history by a handoff summary the model writes, the
// user's recent messages verbatim and the current round: the latest
// assistant item of the turn with its calls and results, and what followed.
// It refuses, without calling the model, when even that would not fit.
func (g *keeper) compact(ctx context.Context, h guard.History, segs [numSegments]int, reserve int) error {
	req := h.Request()
	n := req.Len()
	keepFrom := n
	if a := lastAssistant(req); a >= h.TurnStart() {
		keepFrom = a
	}
	if keepFrom == 0 {
		return g.tooBig(g.input(g.estimate(segs)), reserve)
	}
	quotes, quoted := g.quotes(req, keepFrom, h.TurnStart())

	// What compaction cannot shrink: the system prompt, the tools, the
	// kept round, the quotes and the answer's room.
	floor := segs[System] + segs[Instructions] + segs[Memory] + segs[Knowledge] + segs[Skills] + segs[Tools] + requestOverhead + itemOverhead + g.w.k.text(compactionHeader) + quoted
	for i := keepFrom; i < n; i++ {
		floor += int(g.led.tokens[i])
	}
	// After compaction the provider's last count no longer applies: only
	// the tokenizer's calibration does.
	if in := int(g.ratio * float64(floor)); in+reserve > g.w.c.Window {
		return g.tooBig(in, reserve)
	}

	sreq, err := g.summaryRequest(req, segs)
	if err != nil {
		return err
	}
	summary, err := h.Summarize(ctx, sreq)
	if err != nil {
		return fmt.Errorf("window: the handoff summary: %w", err)
	}
	summary = strings.TrimSpace(summary)
	if summary == "" {
		return errors.New("window: the model wrote an empty handoff summary")
	}
	item := llm.Item{Role: llm.RoleUser, Parts: make([]llm.Part, 0, 1+len(quotes))}
	item.Parts = append(item.Parts, llm.Part{Kind: llm.PartText, Text: compactionHeader + summary})
	for _, q := range quotes {
		item.Parts = append(item.Parts, llm.Part{Kind: llm.PartText, Text: quotePrefix + q})
	}
	before := g.led.total()
	err = h.Compact(item, keepFrom)
	// The history is a new slice from here on, whatever the journal said:
	// count it afresh; the provider's last count described the old one.
	g.led.reset()
	g.measured = false
	if err != nil {
		return err
	}
	segs, _ = g.count(h.Request(), nil)
	h.Warn(fmt.Sprintf("compacted the history (%d items, about %d tokens) into a handoff summary of about %d tokens, "+
		"with %d user messages quoted verbatim and the current round kept", keepFrom, before, g.led.tokens[0], len(quotes)))
	return nil
}

// quotes returns the user's messages before item end to quote verbatim,
// oldest first, and their tokens: every message of the current turn (from
// turnStart), and earlier ones, newest first, while they fit
// KeepUserTokens. Messages an earlier compaction quoted count as the
// user's.
func (g *keeper) quotes(req *llm.Request, end, turnStart int) ([]string, int) {
	var out []string
	tokens, earlier := 0, 0
	full := false
	for i := end - 1; i >= 0 && !full; i-- {
		it := req.At(i)
		if it.Role != llm.RoleUser {
			continue
		}
		var texts []string
		switch it.Origin {
		case llm.OriginInput, llm.OriginSteer:
			if t := strings.TrimSpace(it.Text()); t != "" {
				texts = []string{t}
			}
		case llm.OriginCompaction:
			for _, p := range it.Parts {
				if t, ok := strings.CutPrefix(p.Text, quotePrefix); ok && p.Kind == llm.PartText {
					texts = append(texts, t)
				}
			}
		}
		for j := len(texts) - 1; j >= 0; j-- {
			n := g.w.k.text(texts[j]) + itemOverhead
			if i < turnStart {
				if earlier+n > g.w.c.KeepUserTokens {
					full = true
					break
				}
				earlier += n
			}
			tokens += n
			out = append(out, texts[j])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, tokens
}

// summaryRequest is the request for the handoff summary: the history as the
// turn would send it with the summary prompt after it, tools defined but not
// callable. When that is too big for the window the oldest items are left
// out, cut before an assistant item so every result keeps its call, and a
// note says so.
func (g *keeper) summaryRequest(req *llm.Request, segs [numSegments]int) (*llm.Request, error) {
	n := req.Len()
	fixed := g.estimate(segs) - g.led.total() + g.w.k.text(summaryPrompt) + itemOverhead
	rest := g.led.total()
	from := 0
	for g.input(fixed+rest)+g.w.c.SummaryMaxOutput > g.w.c.Window {
		next := from + 1
		for next < n && req.At(next).Role != llm.RoleAssistant {
			next++
		}
		if next >= n {
			return nil, errors.New("window: the history is too big to summarize even from its latest round")
		}
		for i := from; i < next; i++ {
			rest -= int(g.led.tokens[i])
		}
		if from == 0 {
			fixed += g.w.k.text(leftOut) + itemOverhead
		}
		from = next
	}
	sent := make([]llm.Item, 0, n-from+2)
	if from > 0 {
		// Requests start with a user message on every provider.
		sent = append(sent, llm.Directive(leftOut))
	}
	for i := from; i < n; i++ {
		sent = append(sent, *req.At(i))
	}
	sent = append(sent, llm.Directive(summaryPrompt))
	s := &llm.Request{
		Model:           req.Model,
		System:          req.System,
		Items:           sent,
		Tools:           req.Tools,
		MaxOutputTokens: g.w.c.SummaryMaxOutput,
	}
	if len(s.Tools) > 0 {
		s.ToolChoice = llm.ToolChoiceNone
	}
	return s, nil
}

// leftOut opens a summary request whose oldest items did not fit.
const leftOut = "[rein] The earliest part of this conversation is left out here to fit the context window; the user's messages are kept verbatim elsewhere."

// estimate sums input segments.
func (g *keeper) estimate(segs [numSegments]int) int {
	n := 0
	for s := range inputSegments {
		n += segs[s]
	}
	return n
}
