package kb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/store"
)

// Putter stores chunked files in a knowledge base; *store.Store is one.
type Putter interface {
	PutKBDocs(ctx context.Context, name string, docs []store.KBDoc) (store.KBPut, error)
}

// AddOptions tune Add. The zero value is the default.
type AddOptions struct {
	// MaxFileSize skips larger files (default 2 MiB).
	MaxFileSize int64
	// RelativeTo is the directory paths in references are relative to,
	// when they are inside it (default: the current directory). Files
	// outside it keep their absolute paths.
	RelativeTo string
	// Batch is how many files share one store transaction (default 256).
	Batch int
	// Exclude leaves out what these globs match (doublestar syntax): a
	// glob with a / matches the path below the directory added, one
	// without matches any name on it ("*.log", "testdata").
	Exclude []string
	// NoGitignore reads the directories' .gitignore files no more (by
	// default what they ignore is left out).
	NoGitignore bool
	// Embed, with EmbedModel, embeds the chunks that have no vector yet
	// after the files are stored (see Embed); nil leaves the base as it
	// is: BM25 alone, or vectors to add later.
	Embed      Embedder
	EmbedModel string
}

// DefaultMaxFileSize is the largest file Add reads by default.
const DefaultMaxFileSize = 2 << 20

// AddReport says what Add did.
type AddReport struct {
	Files     int // text files read
	Added     int
	Updated   int
	Unchanged int
	Chunks    int // chunks written
	Bytes     int64
	// Ignored counts the files and directories left out by .gitignore
	// files and Exclude.
	Ignored int
	// Embedded counts the chunks given vectors.
	Embedded int
	// Skipped are the files left out, with why (binary, too large,
	// unreadable), at most maxSkipped of them; SkippedCount counts all.
	Skipped      []Skip
	SkippedCount int
	Duration     time.Duration
}

// Skip is a file Add left out.
type Skip struct {
	Path   string
	Reason string
}

const maxSkipped = 20

// skipDirs are directories Add does not enter: version control and
// dependency trees are rarely what a knowledge base is for.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true, "__pycache__": true}

// Add reads the text files at paths (files, or directories walked
// recursively, leaving out hidden entries, version control and dependency
// directories, binary and overly large files), cuts them into chunks with
// their line ranges and stores them in the knowledge base name, creating it
// if needed. A file already there is replaced when its content changed.
func Add(ctx context.Context, st Putter, name string, paths []string, o AddOptions) (*AddReport, error) {
	start := time.Now()
	if len(paths) == 0 {
		return nil, errors.New("kb: no paths to add")
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.RelativeTo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("kb: %w", err)
		}
		o.RelativeTo = wd
	}
	for _, x := range o.Exclude {
		if !doublestar.ValidatePattern(x) {
			return nil, fmt.Errorf("kb: --exclude %q is not a valid glob", x)
		}
	}
	if o.Embed != nil {
		if err := setEmbedding(ctx, st, name, o.EmbedModel); err != nil {
			return nil, err
		}
	}
	rep := &AddReport{}
	files, err := collect(ctx, paths, rep, o)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	type read struct {
		doc  store.KBDoc
		skip *Skip
	}
	results := make(chan read, o.Batch)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for p := range work {
				d, why := readDoc(p, o)
				r := read{doc: d}
				if why != "" {
					r.skip = &Skip{Path: displayPath(p, o.RelativeTo), Reason: why}
				}
				select {
				case results <- r:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		defer close(work)
		for _, f := range files {
			select {
			case work <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	batch := make([]store.KBDoc, 0, o.Batch)
	put := func() error {
		if len(batch) == 0 {
			return nil
		}
		p, err := st.PutKBDocs(ctx, name, batch)
		if err != nil {
			return err
		}
		rep.Added += p.Added
		rep.Updated += p.Updated
		rep.Unchanged += p.Unchanged
		rep.Chunks += p.Chunks
		batch = batch[:0]
		return nil
	}
	for r := range results {
		if r.skip != nil {
			rep.skip(*r.skip)
			continue
		}
		rep.Files++
		rep.Bytes += r.doc.Size
		batch = append(batch, r.doc)
		if len(batch) == o.Batch {
			if err := put(); err != nil {
				return nil, fmt.Errorf("kb: %s: %w", name, err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := put(); err != nil {
		return nil, fmt.Errorf("kb: %s: %w", name, err)
	}
	if rep.Files == 0 && rep.Added+rep.Updated+rep.Unchanged == 0 {
		// Still create the base, so an empty directory gives an empty base
		// rather than an error later.
		if _, err := st.PutKBDocs(ctx, name, nil); err != nil {
			return nil, fmt.Errorf("kb: %s: %w", name, err)
		}
	}
	if o.Embed != nil {
		n, err := Embed(ctx, st, name, o.Embed)
		rep.Embedded = n
		if err != nil {
			return rep, fmt.Errorf("kb: %s: the files are stored, %d chunks embedded, then: %w; add again to embed the rest", name, n, err)
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

func (r *AddReport) skip(s Skip) {
	r.SkippedCount++
	if len(r.Skipped) < maxSkipped {
		r.Skipped = append(r.Skipped, s)
	}
}

// collect lists the regular files under paths, absolute and de-duplicated.
// A path that does not exist is an error: the user named it.
func collect(ctx context.Context, paths []string, rep *AddReport, o AddOptions) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("kb: %s: %w", p, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("kb: %w", err)
		}
		if !fi.IsDir() {
			if skip, _ := newIgnorer(filepath.Dir(abs), o.Exclude).ignored(abs, false); skip {
				rep.Ignored++
				continue
			}
			add(abs)
			continue
		}
		ig := newIgnorer(abs, o.Exclude)
		err = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err != nil {
				rep.skip(Skip{Path: path, Reason: err.Error()})
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			name := d.Name()
			if path != abs && (strings.HasPrefix(name, ".") || d.IsDir() && skipDirs[name]) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if path != abs {
				if skip, _ := ig.ignored(path, d.IsDir()); skip {
					rep.Ignored++
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
			}
			if d.IsDir() && !o.NoGitignore {
				if err := ig.enter(path); err != nil {
					rep.skip(Skip{Path: path, Reason: ".gitignore: " + err.Error()})
				}
			}
			if d.Type().IsRegular() {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("kb: %s: %w", p, err)
		}
	}
	return files, nil
}

// readDoc reads and chunks one file; a non-empty reason says why it was
// left out.
func readDoc(path string, o AddOptions) (store.KBDoc, string) {
	fi, err := os.Stat(path)
	if err != nil {
		return store.KBDoc{}, "unreadable: " + err.Error()
	}
	if fi.Size() > o.MaxFileSize {
		return store.KBDoc{}, fmt.Sprintf("too large (%d bytes; the limit is %d)", fi.Size(), o.MaxFileSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return store.KBDoc{}, "unreadable: " + err.Error()
	}
	if !isText(b) {
		return store.KBDoc{}, "binary"
	}
	sum := sha256.Sum256(b)
	return store.KBDoc{
		Path:    displayPath(path, o.RelativeTo),
		Size:    int64(len(b)),
		ModTime: fi.ModTime(),
		Hash:    hex.EncodeToString(sum[:16]),
		Chunks:  Chunk(string(b)),
	}, ""
}

// isText reports whether b looks like text: no NUL byte and valid UTF-8 in
// its first 8 KiB (a rune cut at the end of that window is fine).
func isText(b []byte) bool {
	window := min(len(b), 8<<10)
	head := b[:window]
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 {
			cutByWindow := window < len(b) && len(head) < utf8.UTFMax
			return cutByWindow
		}
		head = head[n:]
	}
	return true
}

// displayPath is path relative to base when inside it, slash-separated;
// otherwise the absolute path.
func displayPath(path, base string) string {
	if rel, err := filepath.Rel(base, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}
