package fs

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// grep limits. Both searches skip the same files: .git, links, files over
// maxGrepFileSize and binary files.
const (
	defaultGrepResults = 100
	maxGrepResults     = 1000
	maxGrepLineBytes   = 300
	maxGrepFileSize    = 10 << 20
)

type grepInput struct {
	Pattern    string `json:"pattern" jsonschema:"regular expression (RE2 syntax) matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the workspace root; default the whole workspace"`
	Glob       string `json:"glob,omitempty" jsonschema:"only search files matching this glob; without a slash it matches file names (*.go), with one the path from the workspace root (src/**/*.ts)"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match letters in either case"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"most matching lines to show; default 100, at most 1000"`
}

// query is a validated grep request, shared by both searches.
type query struct {
	re      *regexp.Regexp // matched against one line
	whole   *regexp.Regexp // re in multi-line mode, to find candidate lines fast
	pattern string         // as given to ripgrep
	rel     string         // where to search
	glob    string
	limit   int
}

// match is one matching line.
type match struct {
	path string
	line int
	text string
}

// searcher runs a query; the Go search and ripgrep give the same matches.
type searcher func(ctx context.Context, ws *sandbox.Workspace, q *query, c *collector) error

// Grep returns the grep tool. It searches with the ripgrep program at
// ripgrep when that is not empty, and in Go otherwise; both give the same
// output for text files.
func Grep(ws *sandbox.Workspace, ripgrep string) tool.Tool {
	search := searchGo
	if ripgrep != "" {
		search = rgSearcher(ripgrep)
	}
	return tool.New("grep",
		"Search the workspace's text files for lines matching a regular expression. Shows path:line:text, sorted by path and line. Skips .git, binary files and files over 10 MB.",
		func(ctx context.Context, in grepInput) (tool.Output, error) { return grep(ctx, ws, in, search) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(grepInput) tool.Keys { return readTreeKeys() }),
	)
}

func grep(ctx context.Context, ws *sandbox.Workspace, in grepInput, search searcher) (tool.Output, error) {
	q, err := newQuery(ws, in)
	if err != nil {
		return tool.Output{}, err
	}
	fi, err := ws.Stat(q.rel)
	if err != nil {
		return tool.Output{}, explain(q.rel, err)
	}
	// A file named explicitly is held to the size cap too: ripgrep's
	// --max-filesize skips only the files it finds itself.
	if fi.Mode().IsRegular() && fi.Size() > maxGrepFileSize {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("%s is %d bytes; grep searches files of at most %d MB. Read it in ranges with read_file (offset, limit) instead", quote(q.rel), fi.Size(), maxGrepFileSize>>20)}
	}
	if err := ws.Check(q.rel, false); err != nil {
		return tool.Output{}, err
	}
	c := &collector{limit: q.limit}
	if err := search(ctx, ws, q, c); err != nil {
		return tool.Output{}, err
	}
	return tool.Text(c.format(in)), nil
}

func newQuery(ws *sandbox.Workspace, in grepInput) (*query, error) {
	if in.Pattern == "" {
		return nil, &usageError{msg: "pattern is empty; give a regular expression to search for"}
	}
	pattern := in.Pattern
	if in.IgnoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("pattern %q is not a valid regular expression (RE2 syntax): %v", in.Pattern, err), err: err}
	}
	if strings.Contains(in.Pattern, `\n`) {
		return nil, &usageError{msg: "pattern contains \\n, but grep matches one line at a time; search for one line of the text"}
	}
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return nil, err
	}
	glob := in.Glob
	if glob != "" {
		if strings.HasPrefix(glob, "/") || slices.Contains(strings.Split(glob, "/"), "..") {
			return nil, &usageError{msg: fmt.Sprintf("glob %q must be relative to the workspace root and must not contain ..", glob)}
		}
		if !doublestar.ValidatePattern(glob) {
			return nil, &usageError{msg: fmt.Sprintf("glob %q is not a valid pattern", glob)}
		}
	}
	limit := in.MaxResults
	switch {
	case limit < 0:
		return nil, &usageError{msg: "max_results must not be negative"}
	case limit == 0:
		limit = defaultGrepResults
	case limit > maxGrepResults:
		limit = maxGrepResults
	}
	return &query{re: re, whole: regexp.MustCompile("(?m)" + pattern), pattern: pattern, rel: rel, glob: glob, limit: limit}, nil
}

// wants reports whether the file at p (relative to the workspace) is in
// the query's glob.
func (q *query) wants(p string) bool {
	if q.glob == "" {
		return true
	}
	if !strings.Contains(q.glob, "/") {
		ok, _ := doublestar.Match(q.glob, path.Base(p))
		return ok
	}
	ok, _ := doublestar.Match(q.glob, p)
	return ok
}

// collector keeps the first limit matches in (path, line) order, whatever
// order they arrive in, using memory for about twice that many.
type collector struct {
	limit   int
	matches []match
	total   int
}

func (c *collector) add(m match) {
	c.total++
	c.matches = append(c.matches, m)
	if len(c.matches) >= 2*c.limit+64 {
		c.trim()
	}
}

// remove takes back the n matches added for the file at p.
func (c *collector) remove(p string, n int) {
	c.matches = slices.DeleteFunc(c.matches, func(m match) bool { return m.path == p })
	c.total -= n
}

func (c *collector) trim() {
	slices.SortFunc(c.matches, func(a, b match) int {
		return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.line, b.line))
	})
	if len(c.matches) > c.limit {
		c.matches = c.matches[:c.limit]
	}
}

func (c *collector) format(in grepInput) string {
	c.trim()
	var b strings.Builder
	if c.total == 0 {
		fmt.Fprintf(&b, "no lines match %q", in.Pattern)
		if in.Path != "" {
			fmt.Fprintf(&b, " in %s", in.Path)
		}
		if in.Glob != "" {
			fmt.Fprintf(&b, " (files %s)", in.Glob)
		}
		b.WriteString("\n")
		return b.String()
	}
	for _, m := range c.matches {
		fmt.Fprintf(&b, "%s:%d:%s\n", m.path, m.line, m.text)
	}
	if c.total > len(c.matches) {
		fmt.Fprintf(&b, "(%d of %d matching lines shown; narrow the pattern, path or glob, or raise max_results)\n", len(c.matches), c.total)
	}
	return b.String()
}

// lineText is how a matching line is shown: without its line end, valid
// UTF-8, cut when long.
func lineText(line []byte) string {
	line = trimEOL(line)
	if total := len(line); total > maxGrepLineBytes {
		// clipLine appends in place; line is part of a file's contents.
		line = clipLine(slices.Clone(line[:min(total, maxGrepLineBytes+utf8.UTFMax)]), total, maxGrepLineBytes)
	}
	return strings.ToValidUTF8(string(line), "\uFFFD")
}

func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
