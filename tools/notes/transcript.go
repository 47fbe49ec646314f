package notes

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tools/kb"
)

// Transcript renders the last n turns of items (n < 0: all) as the user's
// messages and the assistant's answers, leaving out tool calls, results,
// directives and knowledge seeds. It returns the text and how many turns
// it holds.
func Transcript(items []llm.Item, n int) (string, int) {
	type turn struct {
		id    string
		lines []string
	}
	var turns []*turn
	var cur *turn
	for _, it := range items {
		if cur == nil || it.TurnID != cur.id {
			cur = &turn{id: it.TurnID}
			turns = append(turns, cur)
		}
		text := textOf(it)
		if text == "" {
			continue
		}
		switch {
		case it.Role == llm.RoleUser && (it.Origin == llm.OriginInput || it.Origin == llm.OriginSteer):
			if i := strings.Index(text, "\n\n"+kb.SeedHeader); i >= 0 {
				text = text[:i]
			}
			cur.lines = append(cur.lines, "User: "+cut(text, maxTurnText))
		case it.Role == llm.RoleAssistant && !hasCalls(it):
			// Narration before calls is not the answer; the last text
			// without calls is.
			cur.lines = append(cur.lines, "Assistant: "+cut(text, maxTurnText))
		}
	}
	var kept []*turn
	for _, t := range turns {
		if len(t.lines) > 0 {
			kept = append(kept, t)
		}
	}
	if n >= 0 && len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	if len(kept) == 0 {
		return "", 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- conversation, last %d turns ---", len(kept))
	for _, t := range kept {
		for _, l := range t.lines {
			b.WriteString("\n")
			b.WriteString(l)
		}
	}
	return b.String(), len(kept)
}

func textOf(it llm.Item) string {
	var parts []string
	for _, p := range it.Parts {
		if p.Kind == llm.PartText && strings.TrimSpace(p.Text) != "" {
			parts = append(parts, strings.TrimSpace(p.Text))
		}
	}
	return strings.Join(parts, "\n")
}

func hasCalls(it llm.Item) bool {
	for _, p := range it.Parts {
		if p.Kind == llm.PartCall {
			return true
		}
	}
	return false
}
