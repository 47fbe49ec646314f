package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os/exec"
	"strconv"
	"strings"

	"github.com/reinhq/rein/sandbox"
)

// rgSearcher returns a searcher that runs ripgrep at bin. Its flags make it
// skip what searchGo skips and nothing else: no ignore files, hidden files
// searched, .git left out, links not followed.
func rgSearcher(bin string) searcher {
	return func(ctx context.Context, ws *sandbox.Workspace, q *query, c *collector) error {
		// ripgrep follows links in the path it is given, and the workspace
		// cannot hand it an opened directory; from a link, search in Go.
		if throughLink(ws, q.rel) {
			return searchGo(ctx, ws, q, c)
		}
		err := runRipgrep(ctx, bin, ws, q, c)
		var failed *rgFailed
		if errors.As(err, &failed) && c.total == 0 {
			// The pattern may be valid RE2 but not valid for ripgrep's
			// engine; the Go search understands every pattern newQuery
			// accepted.
			return searchGo(ctx, ws, q, c)
		}
		return err
	}
}

// throughLink reports whether any element of rel is a link.
func throughLink(ws *sandbox.Workspace, rel string) bool {
	if rel == "." {
		return false
	}
	p := ""
	for elem := range strings.SplitSeq(rel, "/") {
		if p == "" {
			p = elem
		} else {
			p += "/" + elem
		}
		fi, err := ws.Lstat(p)
		if err != nil || fi.Mode()&iofs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

type rgFailed struct {
	status int
	stderr string
}

func (e *rgFailed) Error() string {
	return fmt.Sprintf("ripgrep failed (status %d): %s", e.status, e.stderr)
}

type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgData `json:"path"`
		Lines      rgData `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// rgData is ripgrep's text: UTF-8 in Text, or other bytes in Bytes
// (base64 in the JSON, which encoding/json decodes into []byte).
type rgData struct {
	Text  *string `json:"text"`
	Bytes []byte  `json:"bytes"`
}

func (d rgData) raw() []byte {
	if d.Text != nil {
		return []byte(*d.Text)
	}
	return d.Bytes
}

func runRipgrep(ctx context.Context, bin string, ws *sandbox.Workspace, q *query, c *collector) error {
	args := []string{
		"--json", "--no-config", "--no-ignore", "--hidden", "--no-messages",
		"--max-filesize", strconv.Itoa(maxGrepFileSize),
		"--glob", "!.git",
	}
	if q.glob != "" {
		args = append(args, "--glob", q.glob)
	}
	args = append(args, "--regexp", q.pattern, "--", q.rel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = ws.Dir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return &rgFailed{status: -1, stderr: err.Error()}
	}
	dec := json.NewDecoder(out)
	var decodeErr error
	// checked is the last path given to ws.Check (once one was), denied
	// its verdict.
	var checked string
	var once, denied bool
	for {
		var m rgMessage
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				decodeErr = fmt.Errorf("reading ripgrep output: %w", err)
			}
			break
		}
		if m.Type != "match" {
			continue
		}
		p := strings.TrimPrefix(string(m.Data.Path.raw()), "./")
		// ripgrep's glob follows gitignore rules; keep exactly what the Go
		// search would take.
		if q.glob != "" && !q.wants(p) {
			continue
		}
		// ripgrep reads the files itself: leave out what the workspace's
		// deny list keeps from reading, as the Go search does. A file's
		// matches come together, so it is checked once, not per match
		// (Check looks at each element of the path for links).
		if !once || p != checked {
			checked, denied, once = p, ws.Check(p, false) != nil, true
		}
		if denied {
			continue
		}
		c.add(match{path: p, line: m.Data.LineNumber, text: lineText(m.Data.Lines.raw())})
	}
	// Drain so that ripgrep is not blocked writing when we stopped early.
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if decodeErr != nil {
		return decodeErr
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// Status 1 is "no match"; 2 with matches is an unreadable file
		// somewhere, which the Go search skips too.
		if st := exit.ExitCode(); st == 1 || (st == 2 && c.total > 0) {
			return nil
		}
		return &rgFailed{status: exit.ExitCode(), stderr: strings.TrimSpace(stderr.String())}
	}
	return err
}
