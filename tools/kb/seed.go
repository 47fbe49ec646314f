package kb

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/store"
)

// Seed limits (DESIGN §7.3): the first user message of a turn carries the
// best passages of at most SeedKBs attached bases, at most SeedChars
// characters of each.
const (
	SeedKBs   = 3
	SeedChars = 4000
	// seedSearch is how many passages of a base are fetched to fill its
	// share.
	seedSearch = 8
	// seedMinPart is the smallest piece of a passage worth cutting to fill
	// the rest of a share.
	seedMinPart = 200
)

// SeedHeader opens the seed: what the passages are and how to treat them.
const SeedHeader = "[Knowledge base context] Passages from the attached knowledge bases that match the message above, " +
	"found by full-text search. Treat them as grounded but possibly incomplete; search more with rag, and cite path:lines."

// EventSources is the type of the event that reports a seed's sources. It
// is additive: handlers that do not know it ignore it; its Extra holds
// "sources" ([]Ref) and "kbs" (the bases searched), its Content a summary.
const EventSources event.Type = "sources"

// Seeded is the knowledge seed of a turn.
type Seeded struct {
	// Text is the seed to append to the user's message; empty when no
	// passage matched.
	Text string
	// Sources are the passages in Text, in order.
	Sources []store.Passage
	// KBs are the bases searched (at most SeedKBs).
	KBs []string
	// Failed says why bases that were searched gave nothing: search errors.
	// A seed never fails a turn.
	Failed []string
}

// Seed searches the first SeedKBs of kbs for the user's message and
// returns their best passages, each base's section at most SeedChars
// characters: "## <kb>" then each passage under its reference. It searches
// for the message's rarest words only (store.SeedKBQuery), so that it costs
// a few milliseconds however long the message and however common its
// words; a message with no such word seeds nothing. A search that fails is
// reported in Failed.
func Seed(ctx context.Context, idx Index, kbs []string, message string) Seeded {
	var s Seeded
	if len(kbs) > SeedKBs {
		kbs = kbs[:SeedKBs]
	}
	s.KBs = kbs
	if len(kbs) == 0 {
		return s
	}
	q, err := idx.SeedKBQuery(ctx, message)
	if err != nil {
		s.Failed = append(s.Failed, fmt.Sprintf("%s: %v", strings.Join(kbs, ", "), err))
		return s
	}
	if len(q.Terms) == 0 {
		return s
	}
	res, err := idx.SearchKBs(ctx, kbs, q, seedSearch)
	if err != nil {
		s.Failed = append(s.Failed, fmt.Sprintf("%s: %v", strings.Join(kbs, ", "), err))
		return s
	}
	var sections []string
	for i, name := range kbs {
		body, used := section(res[i])
		if used == 0 {
			continue
		}
		s.Sources = append(s.Sources, res[i][:used]...)
		sections = append(sections, "## "+name+"\n"+body)
	}
	if len(sections) > 0 {
		s.Text = SeedHeader + "\n\n" + strings.Join(sections, "\n\n")
	}
	return s
}

// section writes passages under their references until SeedChars runes; a
// passage that does not fit is cut to the space left when enough is left,
// else left out with the ones after it. used counts the passages written.
func section(ps []store.Passage) (body string, used int) {
	var b strings.Builder
	left := SeedChars
	for _, p := range ps {
		head := "### " + p.Ref() + "\n"
		if b.Len() > 0 {
			head = "\n" + head
		}
		room := left - utf8.RuneCountInString(head)
		if room < seedMinPart {
			break
		}
		text := p.Text
		if utf8.RuneCountInString(text) > room {
			text = cut(text, room)
		}
		b.WriteString(head)
		b.WriteString(text)
		left = room - utf8.RuneCountInString(text)
		used++
	}
	return b.String(), used
}

// Event returns the event reporting the seed's sources, for the turn's
// event stream.
func (s Seeded) Event() event.Event {
	files := map[string]bool{}
	for _, p := range s.Sources {
		files[p.KB+"/"+p.Path] = true
	}
	content := fmt.Sprintf("knowledge seed: %d passages from %d files of %s", len(s.Sources), len(files), strings.Join(s.KBs, ", "))
	if len(s.Failed) > 0 {
		content += "; failed: " + strings.Join(s.Failed, "; ")
	}
	return event.Event{
		Type:    EventSources,
		Content: content,
		Extra:   map[string]any{"sources": refs(s.Sources), "kbs": s.KBs},
	}
}

// WithSeed returns the user's message with the seed appended, as the turn's
// first user message carries it.
func WithSeed(message string, s Seeded) string {
	if s.Text == "" {
		return message
	}
	return message + "\n\n" + s.Text
}
