package fs

import (
	"bytes"
	"context"
	"io"
	iofs "io/fs"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reinhq/rein/sandbox"
)

// searchGo is grep without ripgrep: a walk of the workspace feeding one
// searching goroutine per CPU.
func searchGo(ctx context.Context, ws *sandbox.Workspace, q *query, c *collector) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	paths := make(chan string, 256)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf []byte
			var found []match
			for p := range paths {
				found = found[:0]
				buf, found = searchFile(ws, p, q, buf, found)
				if len(found) > 0 {
					mu.Lock()
					for _, m := range found {
						c.add(m)
					}
					mu.Unlock()
				}
			}
		})
	}
	err := ws.Walk(ctx, q.rel, func(p string, d iofs.DirEntry, err error) error {
		switch {
		case err != nil:
			// Unreadable parts are skipped, as ripgrep does.
			return nil
		case d.Name() == ".git" && p != q.rel:
			if d.IsDir() {
				return iofs.SkipDir
			}
			return nil
		case !d.Type().IsRegular() || !q.wants(p):
			return nil
		}
		select {
		case paths <- p:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(paths)
	wg.Wait()
	return err
}

// grepChunk is how much of a file the Go search holds at once: lines up to
// this long are searched in the buffer, longer ones streamed through the
// regexp, so a worker's memory is bounded whatever the file's lines.
const grepChunk = 1 << 20

// searchFile appends the matching lines of the file at p to found, reading
// it in pieces of at most grepChunk bytes into buf, and returns both for
// reuse. A file with a NUL byte is binary: its matches are dropped.
func searchFile(ws *sandbox.Workspace, p string, q *query, buf []byte, found []match) ([]byte, []match) {
	f, err := ws.Open(p)
	if err != nil {
		return buf, found
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGrepFileSize {
		return buf, found
	}
	if size := int(min(fi.Size()+1, grepChunk)); cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:cap(buf)]
	start := len(found)
	s := fileSearch{q: q, path: p, line: 1}
	n, eof := 0, false
	for {
		for n < len(buf) && !eof {
			m, err := f.Read(buf[n:])
			n += m
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return buf, found[:start]
			}
		}
		if n == 0 {
			return buf, found
		}
		end := bytes.LastIndexByte(buf[:n], '\n') + 1
		if eof {
			end = n
		}
		if end == 0 {
			// A line longer than the buffer: stream it.
			l := longLine{src: f, buf: buf, n: n}
			var ok bool
			if found, ok = s.long(&l, found); !ok {
				return buf, found[:start]
			}
			n, eof = copy(buf, buf[l.pos:l.n]), l.eof
			continue
		}
		if bytes.IndexByte(buf[:end], 0) >= 0 {
			return buf, found[:start]
		}
		found = s.search(buf[:end], found)
		n = copy(buf, buf[end:n])
		if eof && n == 0 {
			return buf, found
		}
	}
}

// fileSearch is the state of searchFile across the pieces of one file.
type fileSearch struct {
	q    *query
	path string
	line int // the number of the first line of the next piece
}

// search appends the matching lines of chunk, whole lines, to found.
func (s *fileSearch) search(chunk []byte, found []match) []match {
	// The multi-line regexp finds the next line that may match; the
	// single-line one decides, so a match across a line end never counts.
	line, counted := s.line, 0
	for pos := 0; pos < len(chunk); {
		loc := s.q.whole.FindIndex(chunk[pos:])
		if loc == nil {
			break
		}
		start := pos + loc[0]
		if start == len(chunk) && chunk[start-1] == '\n' {
			// An empty match after the last line end is not on a line.
			break
		}
		ls := bytes.LastIndexByte(chunk[:start], '\n') + 1
		le := len(chunk)
		if i := bytes.IndexByte(chunk[start:], '\n'); i >= 0 {
			le = start + i
		}
		line += bytes.Count(chunk[counted:ls], []byte{'\n'})
		counted = ls
		if text := chunk[ls:le]; s.q.re.Match(text) {
			found = append(found, match{path: s.path, line: line, text: lineText(text)})
		}
		pos = le + 1
	}
	s.line = line + bytes.Count(chunk[counted:], []byte{'\n'})
	return found
}

// long matches the line l streams and appends it to found when it
// matches; false when the file turns out binary or cannot be read.
func (s *fileSearch) long(l *longLine, found []match) ([]match, bool) {
	var matched bool
	if lit, complete := s.q.re.LiteralPrefix(); complete && lit != "" {
		// A plain string is looked for in the pieces directly, many
		// times faster than the regexp reading runes.
		matched = l.contains([]byte(lit))
	} else {
		matched = s.q.re.MatchReader(l)
	}
	l.drain()
	if l.err != nil || l.binary {
		return found, false
	}
	if matched {
		text := clipLine(l.head, l.total, maxGrepLineBytes)
		found = append(found, match{path: s.path, line: s.line, text: strings.ToValidUTF8(string(trimEOL(text)), "\uFFFD")})
	}
	s.line++
	return found, true
}

// longLine is a line too long for the buffer, read as runes for
// regexp.MatchReader: it starts with buf[:n] and goes on in src. It reads
// the rest in buffer-sized pieces, keeping the first bytes to show, and
// leaves what follows the line in buf[pos:n].
type longLine struct {
	src    io.Reader
	buf    []byte
	pos, n int
	eof    bool // src is exhausted
	done   bool // the line end was read
	total  int  // the line's length so far, without its end
	head   []byte
	binary bool
	err    error
}

func (l *longLine) fill() {
	l.n = copy(l.buf, l.buf[l.pos:l.n])
	l.pos = 0
	for l.n < len(l.buf) && !l.eof {
		m, err := l.src.Read(l.buf[l.n:])
		l.n += m
		if err == io.EOF {
			l.eof = true
		} else if err != nil {
			l.err, l.eof = err, true
		}
	}
}

// ReadRune returns the line's next rune, and io.EOF at its end.
func (l *longLine) ReadRune() (rune, int, error) {
	if l.done {
		return 0, 0, io.EOF
	}
	if l.n-l.pos < utf8.UTFMax && !l.eof {
		l.fill()
	}
	if l.pos == l.n {
		l.done = true
		return 0, 0, io.EOF
	}
	c := l.buf[l.pos]
	if c == '\n' {
		l.pos++
		l.done = true
		return 0, 0, io.EOF
	}
	r, size := rune(c), 1
	if c >= utf8.RuneSelf {
		r, size = utf8.DecodeRune(l.buf[l.pos:l.n])
	}
	l.keep(l.buf[l.pos : l.pos+size])
	l.pos += size
	return r, size, nil
}

func (l *longLine) keep(b []byte) {
	if bytes.IndexByte(b, 0) >= 0 {
		l.binary = true
	}
	if room := maxGrepLineBytes + utf8.UTFMax - len(l.head); room > 0 {
		l.head = append(l.head, b[:min(room, len(b))]...)
	}
	l.total += len(b)
}

// contains reads the line until it finds lit, which holds no line end,
// and reports whether it did.
func (l *longLine) contains(lit []byte) bool {
	var tail []byte // the last bytes read, for a lit cut between pieces
	for !l.done {
		if l.pos == l.n {
			if l.eof {
				l.done = true
				return false
			}
			l.fill()
			continue
		}
		seg := l.buf[l.pos:l.n]
		end := bytes.IndexByte(seg, '\n')
		if end >= 0 {
			seg = seg[:end]
		}
		across := append(tail, seg[:min(len(seg), len(lit)-1)]...)
		found := bytes.Contains(across, lit) || bytes.Contains(seg, lit)
		l.keep(seg)
		l.pos += len(seg)
		if end >= 0 {
			l.pos++
			l.done = true
		}
		if found {
			return true
		}
		if len(seg) >= len(lit)-1 {
			tail = append(tail[:0], seg[len(seg)-(len(lit)-1):]...)
		} else {
			tail = append(tail, seg...)
			tail = tail[max(0, len(tail)-(len(lit)-1)):]
		}
	}
	return false
}

// drain reads the rest of the line, when the regexp stopped early.
func (l *longLine) drain() {
	for !l.done {
		if l.pos == l.n {
			if l.eof {
				l.done = true
				return
			}
			l.fill()
			continue
		}
		rest := l.buf[l.pos:l.n]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.keep(rest)
			l.pos = l.n
			continue
		}
		l.keep(rest[:i])
		l.pos += i + 1
		l.done = true
	}
}
