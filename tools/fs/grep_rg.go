package fs

import (
	"bufio"
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

// maxRgMessage caps one message of ripgrep's JSON output that is decoded:
// a matching line of up to about 256 KB. A file with a longer matching
// line is searched again in Go (searchFile), in bounded memory.
const maxRgMessage = 256 << 10

// readCapped reads one line of br into buf, without its end, keeping at
// most limit bytes: over reports the line was longer (and was read to its
// end, the rest dropped).
func readCapped(br *bufio.Reader, buf []byte, limit int) (line []byte, over bool, err error) {
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if room := limit - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), total-1 > limit, nil
		case errors.Is(err, io.EOF) && total > 0:
			return buf, total > limit, nil
		default:
			return buf, false, err
		}
	}
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
	// ripgrep's JSON holds a matching line whole, whatever its length
	// (--max-columns does not apply to it), so its messages are read with a
	// cap: a file with a longer one is searched in Go instead, which
	// streams long lines.
	br := bufio.NewReaderSize(out, 64<<10)
	var decodeErr error
	var redo []string
	// cur is the file of the messages being read, n how many of its
	// matches were added, skip whether it is left out (denied, or to be
	// searched again in Go).
	var cur string
	var n int
	var skip bool
	var msg []byte
	for {
		line, over, err := readCapped(br, msg[:0], maxRgMessage)
		msg = line
		if err != nil {
			if !errors.Is(err, io.EOF) {
				decodeErr = fmt.Errorf("reading ripgrep output: %w", err)
			}
			break
		}
		if over {
			if !skip && cur != "" {
				c.remove(cur, n)
				redo = append(redo, cur)
				skip = true
			}
			continue
		}
		var m rgMessage
		if err := json.Unmarshal(line, &m); err != nil {
			decodeErr = fmt.Errorf("reading ripgrep output: %w", err)
			break
		}
		switch m.Type {
		case "begin":
			cur, n = strings.TrimPrefix(string(m.Data.Path.raw()), "./"), 0
			// ripgrep's glob follows gitignore rules; keep exactly what
			// the Go search would take. ripgrep reads the files itself:
			// leave out what the workspace's deny list keeps from reading
			// (by name, link or identity), as the Go search does.
			skip = (q.glob != "" && !q.wants(cur)) || ws.Check(cur, false) != nil
		case "match":
			if skip {
				continue
			}
			n++
			c.add(match{path: cur, line: m.Data.LineNumber, text: lineText(m.Data.Lines.raw())})
		}
	}
	if decodeErr == nil && ctx.Err() == nil {
		var buf []byte
		var found []match
		for _, p := range redo {
			buf, found = searchFile(ws, p, q, buf, found[:0])
			for _, m := range found {
				c.add(m)
			}
		}
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
