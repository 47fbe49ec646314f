// Package kb is rein's knowledge bases (DESIGN §7.3): `rein kb add` cuts
// text files into chunks kept in the store, where SQLite FTS5 ranks them
// with BM25; the rag and kb_files tools search and list the bases attached
// to a turn, and Seed puts the best passages into the turn's first user
// message.
package kb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Index is what the tools read; *store.Store is one.
type Index interface {
	KB(ctx context.Context, name string) (store.KB, error)
	// KBExists is the gate's cheap check (see Gate).
	KBExists(ctx context.Context, name string) error
	SearchKB(ctx context.Context, name, query string, limit int) ([]store.Passage, error)
	KBFiles(ctx context.Context, name string) ([]store.KBFile, error)
	// SeedKBQuery and SearchKBs are the seed's search (see Seed).
	SeedKBQuery(ctx context.Context, message string) (store.KBQuery, error)
	SearchKBs(ctx context.Context, names []string, q store.KBQuery, limit int) ([][]store.Passage, error)
}

// Tool names.
const (
	RagName     = "rag"
	KBFilesName = "kb_files"
)

// Limits of the tools' results.
const (
	// ragPassages is how many passages one rag call returns.
	ragPassages = 6
	// passageMax bounds one passage's text in a rag result, in runes.
	passageMax = 2000
	// DefaultFilesLimit and MaxFilesLimit bound the files kb_files lists.
	DefaultFilesLimit = 50
	MaxFilesLimit     = 500
)

type ragInput struct {
	Query  string `json:"query" jsonschema:"what to look for, in words likely to appear in the passages"`
	KBName string `json:"kb_name" jsonschema:"the attached knowledge base to search"`
}

// Option configures the rag tool.
type Option func(*ragConfig)

type ragConfig struct{ embedders Embedders }

// WithEmbedders lets rag search the bases that have embeddings by BM25 and
// their vectors fused (Search); without it every base is searched by BM25.
func WithEmbedders(e Embedders) Option {
	return func(c *ragConfig) { c.embedders = e }
}

// Rag returns the rag tool over the knowledge bases kbs: the passages of
// one base that best match a query, each with its file and lines.
func Rag(idx Index, kbs []string, opts ...Option) tool.Tool {
	var c ragConfig
	for _, o := range opts {
		o(&c)
	}
	t := tool.New(RagName,
		"Search one attached knowledge base for passages matching a query (full-text BM25 ranking, fused with semantic search where the base has embeddings); each passage comes with its file and line range to cite. "+
			"Call once per base; calls run in parallel. Attached: "+strings.Join(kbs, ", ")+".",
		func(ctx context.Context, in ragInput) (tool.Output, error) {
			return rag(ctx, idx, kbs, in, c.embedders)
		},
		tool.WithAccess(tool.ReadOnly))
	return withSchema(t, func(props map[string]any) {
		setProp(props, "kb_name", "enum", kbs)
		setProp(props, "query", "minLength", 1)
	})
}

func rag(ctx context.Context, idx Index, kbs []string, in ragInput, embedders Embedders) (tool.Output, error) {
	if err := attached(kbs, in.KBName); err != nil {
		return tool.Output{Text: err.Error(), Failed: true}, nil
	}
	ps, _, note, err := Search(ctx, idx, in.KBName, in.Query, ragPassages, embedders)
	if errors.Is(err, store.ErrEmptyQuery) {
		return tool.Output{Text: "the query has no words to search for; give the words the passages should contain", Failed: true}, nil
	}
	if err != nil {
		return tool.Output{}, err
	}
	if len(ps) == 0 {
		return tool.Textf("no passage of %s matches %q; try other words, or list its files with kb_files", in.KBName, in.Query), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d passages from %s for %q, best first:\n", len(ps), in.KBName, in.Query)
	if note != "" {
		fmt.Fprintf(&b, "(%s)\n", note)
	}
	for i, p := range ps {
		fmt.Fprintf(&b, "\n[%d] %s\n%s\n", i+1, p.Ref(), cut(p.Text, passageMax))
	}
	meta, _ := json.Marshal(map[string]any{"sources": refs(ps)})
	return tool.Output{Text: b.String(), Meta: meta}, nil
}

type filesInput struct {
	KBName  string `json:"kb_name" jsonschema:"the attached knowledge base"`
	Pattern string `json:"pattern,omitempty" jsonschema:"keep files whose path matches: a glob such as **/*.md or docs/*, or else a case-insensitive substring"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many files to show (default 50, at most 500)"`
}

// Files returns the kb_files tool over the knowledge bases kbs: the files
// of one base, how many there are, optionally filtered by a pattern.
func Files(idx Index, kbs []string) tool.Tool {
	t := tool.New(KBFilesName,
		"List the files of one attached knowledge base with their sizes, or count them; pattern filters by path (glob or substring). Attached: "+strings.Join(kbs, ", ")+".",
		func(ctx context.Context, in filesInput) (tool.Output, error) { return files(ctx, idx, kbs, in) },
		tool.WithAccess(tool.ReadOnly))
	return withSchema(t, func(props map[string]any) {
		setProp(props, "kb_name", "enum", kbs)
		setProp(props, "limit", "minimum", 0)
	})
}

func files(ctx context.Context, idx Index, kbs []string, in filesInput) (tool.Output, error) {
	if err := attached(kbs, in.KBName); err != nil {
		return tool.Output{Text: err.Error(), Failed: true}, nil
	}
	match, err := matcher(in.Pattern)
	if err != nil {
		return tool.Output{Text: err.Error(), Failed: true}, nil
	}
	limit := in.Limit
	switch {
	case limit <= 0:
		limit = DefaultFilesLimit
	case limit > MaxFilesLimit:
		limit = MaxFilesLimit
	}
	all, err := idx.KBFiles(ctx, in.KBName)
	if err != nil {
		return tool.Output{}, err
	}
	var hits []store.KBFile
	for _, f := range all {
		if match(f.Path) {
			hits = append(hits, f)
		}
	}
	var b strings.Builder
	if in.Pattern == "" {
		fmt.Fprintf(&b, "%s holds %d files", in.KBName, len(all))
	} else {
		fmt.Fprintf(&b, "%d of the %d files of %s match %q", len(hits), len(all), in.KBName, in.Pattern)
	}
	if len(hits) > limit {
		fmt.Fprintf(&b, "; the first %d by path", limit)
		hits = hits[:limit]
	}
	b.WriteString(":\n")
	for _, f := range hits {
		fmt.Fprintf(&b, "%s  (%d bytes, %d chunks)\n", f.Path, f.Size, f.Chunks)
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

// matcher returns the filter of a kb_files pattern: a glob when it holds
// glob syntax (matched against the whole path, and against the file name
// when it has no '/'), a case-insensitive substring otherwise.
func matcher(pattern string) (func(string) bool, error) {
	pattern = strings.TrimSpace(pattern)
	if pattern == "" {
		return func(string) bool { return true }, nil
	}
	if !strings.ContainsAny(pattern, "*?[{") {
		low := strings.ToLower(pattern)
		return func(p string) bool { return strings.Contains(strings.ToLower(p), low) }, nil
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("pattern %q is not a valid glob; use * within a name, ** across directories, or plain text to match a substring", pattern)
	}
	base := !strings.Contains(pattern, "/")
	return func(p string) bool {
		if ok, _ := doublestar.Match(pattern, p); ok {
			return true
		}
		if base {
			ok, _ := doublestar.Match(pattern, p[strings.LastIndexByte(p, '/')+1:])
			return ok
		}
		return false
	}, nil
}

func attached(kbs []string, name string) error {
	if slices.Contains(kbs, name) {
		return nil
	}
	return fmt.Errorf("knowledge base %q is not attached to this turn; attached: %s", name, strings.Join(kbs, ", "))
}

// Ref is a passage's reference as reported to UIs.
type Ref struct {
	KB        string  `json:"kb"`
	Path      string  `json:"path"`
	StartLine int     `json:"start_line"`
	EndLine   int     `json:"end_line"`
	Score     float64 `json:"score"`
}

func refs(ps []store.Passage) []Ref {
	out := make([]Ref, len(ps))
	for i, p := range ps {
		out[i] = Ref{KB: p.KB, Path: p.Path, StartLine: p.StartLine, EndLine: p.EndLine, Score: p.Score}
	}
	return out
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
