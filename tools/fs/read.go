package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// read_file limits: enough for a whole source file, not enough to flood
// the context window with one call.
const (
	defaultReadLines = 2000
	maxReadLineBytes = 2000
	maxReadOutput    = 100 << 10
)

type readInput struct {
	Path   string `json:"path" jsonschema:"file to read, relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line to show, counting from 1; default 1"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to show; default 2000"`
}

// ReadFile returns the read_file tool: a range of a text file's lines,
// numbered.
func ReadFile(ws *sandbox.Workspace) tool.Tool {
	return tool.New("read_file",
		"Read a text file of the workspace. Lines are numbered from 1 (number, tab, text). Shows up to 2000 lines from offset; long lines are cut. Binary files are refused.",
		func(ctx context.Context, in readInput) (tool.Output, error) { return readFile(ctx, ws, in) },
		tool.WithAccess(tool.ReadOnly),
		tool.WithKeys(func(in readInput) tool.Keys { return readFileKeys(ws, in.Path) }),
	)
}

func readFile(ctx context.Context, ws *sandbox.Workspace, in readInput) (tool.Output, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("offset (%d) and limit (%d) must not be negative; offset counts lines from 1", in.Offset, in.Limit)}
	}
	first := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	rel, err := ws.Rel(in.Path)
	if err != nil {
		return tool.Output{}, err
	}
	f, err := ws.Open(rel)
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tool.Output{}, explain(rel, err)
	}
	if fi.IsDir() {
		return tool.Output{}, &usageError{msg: quote(rel) + " is a directory; use list_dir to see what it holds"}
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Output{}, explain(rel, err)
	}
	if isBinary(head) {
		return tool.Output{}, &usageError{msg: binaryMessage(rel, head, fi.Size())}
	}
	if fi.Size() == 0 {
		return tool.Text(rel + " is empty (0 lines)."), nil
	}

	lr := lineReader{r: br, max: maxReadLineBytes}
	out := make([]byte, 0, min(fi.Size()+fi.Size()/4, maxReadOutput+1024))
	n, last, capped := 0, 0, false
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return tool.Output{}, ctx.Err()
		}
		line, ok, err := lr.next(n+1 >= first && n+1 < first+limit && !capped)
		if err != nil {
			return tool.Output{}, explain(rel, err)
		}
		if !ok {
			break
		}
		n++
		if n < first || n >= first+limit || capped {
			continue
		}
		if len(out) > 0 && len(out)+len(line) > maxReadOutput {
			capped = true
			continue
		}
		out = appendNumbered(out, n, line)
		last = n
	}
	if first > n {
		return tool.Output{}, &usageError{msg: fmt.Sprintf("offset %d is past the end of %s, which has %d lines", first, quote(rel), n)}
	}
	switch {
	case capped:
		out = fmt.Appendf(out, "(output capped at %d KB: lines %d-%d of %d shown; continue with offset=%d)\n", maxReadOutput>>10, first, last, n, last+1)
	case last < n:
		out = fmt.Appendf(out, "(lines %d-%d of %d shown; continue with offset=%d)\n", first, last, n, last+1)
	case first > 1:
		out = fmt.Appendf(out, "(lines %d-%d of %d shown; end of file)\n", first, last, n)
	}
	return tool.Text(string(bytes.ToValidUTF8(out, []byte("\uFFFD")))), nil
}

func appendNumbered(out []byte, n int, line []byte) []byte {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		out = append(out, ' ')
	}
	out = append(out, digits...)
	out = append(out, '\t')
	out = append(out, line...)
	return append(out, '\n')
}

// lineReader yields a file's lines without their line ends, reading lines
// it is told to skip without copying them.
type lineReader struct {
	r       *bufio.Reader
	max     int
	scratch []byte
}

// next returns the next line, cut to max bytes when keep is set, and
// reports false at the end of the input. The line is valid until the next
// call.
func (l *lineReader) next(keep bool) ([]byte, bool, error) {
	l.scratch = l.scratch[:0]
	total := 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		total += len(chunk)
		// Keep a few bytes past max so the cut can find a rune boundary.
		if room := l.max + utf8.UTFMax - len(l.scratch); keep && room > 0 {
			l.scratch = append(l.scratch, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == nil:
			// The line end is not part of the line's length.
			total--
			if len(chunk) > 1 && chunk[len(chunk)-2] == '\r' {
				total--
			}
			return l.finish(keep, total), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return l.finish(keep, total), total > 0, nil
		default:
			return nil, false, err
		}
	}
}

func (l *lineReader) finish(keep bool, total int) []byte {
	if !keep {
		return nil
	}
	line := bytes.TrimSuffix(l.scratch, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return clipLine(line, total, l.max)
}
