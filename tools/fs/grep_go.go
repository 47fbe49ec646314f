package fs

import (
	"bytes"
	"context"
	"io"
	iofs "io/fs"
	"runtime"
	"sync"

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

// searchFile appends the matching lines of the file at p to found, reading
// it into buf, and returns both for reuse.
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
	buf, err = readInto(buf, f, fi.Size())
	if err != nil || bytes.IndexByte(buf, 0) >= 0 {
		return buf, found
	}
	// The multi-line regexp finds the next line that may match; the
	// single-line one decides, so a match across a line end never counts.
	line, counted := 1, 0
	for pos := 0; pos < len(buf); {
		loc := q.whole.FindIndex(buf[pos:])
		if loc == nil {
			break
		}
		start := pos + loc[0]
		if start == len(buf) && buf[start-1] == '\n' {
			// An empty match after the last line end is not on a line.
			break
		}
		ls := bytes.LastIndexByte(buf[:start], '\n') + 1
		le := len(buf)
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			le = start + i
		}
		line += bytes.Count(buf[counted:ls], []byte{'\n'})
		counted = ls
		if text := buf[ls:le]; q.re.Match(text) {
			found = append(found, match{path: p, line: line, text: lineText(text)})
		}
		pos = le + 1
	}
	return buf, found
}

// readInto reads r, of about size bytes, into buf's storage.
func readInto(buf []byte, r io.Reader, size int64) ([]byte, error) {
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+512)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
