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
	return SeedWith(ctx, idx, kbs, message, nil)
}

// SeedWith is Seed with the embeddings of the bases that have them: for
// such a base the message's nearest passages by cosine are fused with the
// BM25 ones by reciprocal rank (as rag's Search does), so a message that
// says in other words what a passage says still seeds it, and a message
// of common words only seeds from its vectors. The message is embedded
// once per embedding model. When the embeddings endpoint fails, the base
// is seeded by BM25 alone and Failed says why. nil embedders is Seed.
func SeedWith(ctx context.Context, idx Index, kbs []string, message string, embedders Embedders) Seeded {
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
	res := make([][]store.Passage, len(kbs))
	if len(q.Terms) > 0 {
		if res, err = idx.SearchKBs(ctx, kbs, q, seedSearch); err != nil {
			s.Failed = append(s.Failed, fmt.Sprintf("%s: %v", strings.Join(kbs, ", "), err))
			return s
		}
	}
	hybrid := s.fuseVectors(ctx, idx, kbs, message, embedders, res)
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
		header := SeedHeader
		if hybrid {
			header = SeedHeaderHybrid
		}
		s.Text = header + "\n\n" + strings.Join(sections, "\n\n")
	}
	return s
}

// SeedHeaderHybrid opens a seed some of whose bases were also searched by
// their embeddings.
const SeedHeaderHybrid = "[Knowledge base context] Passages from the attached knowledge bases that match the message above, " +
	"found by full-text and semantic search. Treat them as grounded but possibly incomplete; search more with rag, and cite path:lines."

// seedEmbedChars bounds the part of the message embedded for the seed: the
// question is at its start, and an embeddings endpoint takes a bounded
// input.
const seedEmbedChars = 8000

// fuseVectors fuses, for each base of kbs with embeddings, its BM25
// passages res[i] with its nearest passages to the message's vector, in
// place; it reports whether any base was searched so. A failing endpoint
// leaves the base's BM25 passages and is said in s.Failed.
func (s *Seeded) fuseVectors(ctx context.Context, idx Index, kbs []string, message string, embedders Embedders, res [][]store.Passage) bool {
	vs, ok := idx.(VectorStore)
	if !ok || embedders == nil || strings.TrimSpace(message) == "" {
		return false
	}
	text := message
	if utf8.RuneCountInString(text) > seedEmbedChars {
		text = cut(text, seedEmbedChars)
	}
	vecs := map[string][]float32{} // by model: the message embedded once
	failed := map[string]error{}
	hybrid := false
	for i, name := range kbs {
		model, err := vs.KBEmbedding(ctx, name)
		if err != nil || model == "" {
			continue
		}
		vec, done := vecs[model]
		if !done && failed[model] == nil {
			vec, err = embedOne(ctx, embedders, model, text)
			if err != nil {
				failed[model] = err
			} else {
				vecs[model] = vec
			}
		}
		if err := failed[model]; err != nil {
			s.Failed = append(s.Failed, fmt.Sprintf("%s: BM25 only: the embeddings of %s failed (%v)", name, model, err))
			continue
		}
		semantic, err := vs.SearchKBVectors(ctx, name, vec, seedSearch)
		if err != nil {
			s.Failed = append(s.Failed, fmt.Sprintf("%s: BM25 only: %v", name, err))
			continue
		}
		res[i] = fuse(seedSearch, res[i], semantic)
		hybrid = true
	}
	return hybrid
}

// embedOne embeds text with the embedder of model.
func embedOne(ctx context.Context, embedders Embedders, model, text string) ([]float32, error) {
	e, err := embedders(model)
	if err != nil {
		return nil, err
	}
	vecs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("the embedder gave %d vectors for one message", len(vecs))
	}
	return vecs[0], nil
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
