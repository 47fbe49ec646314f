package tui

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// historyLimit is how many inputs a workspace's history keeps: enough to
// reach back over days of work, small enough to read at every start.
const historyLimit = 500

// maxHistoryEntry bounds one remembered input; a huge paste is sent but
// not kept for recall.
const maxHistoryEntry = 64 << 10

// History is the inputs sent in one workspace, oldest first, recalled with
// Up and Down. It is kept in a small file of JSON strings, one a line (an
// input may hold line breaks), trimmed to its limit as it grows. A nil
// *History keeps nothing.
type History struct {
	path  string
	limit int

	mu      sync.Mutex
	entries []string
	// lines is how many lines the file holds, trimmed ones included.
	lines int
}

// HistoryPath is the history file of the workspace dir under the user's
// state directory ($XDG_STATE_HOME, else ~/.local/state): one file per
// workspace, named by a hash of its absolute path.
func HistoryPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("history: workspace path: %w", err)
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("history: no state directory (set XDG_STATE_HOME): %w", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(state, "rein", "history", hex.EncodeToString(sum[:12])+".jsonl"), nil
}

// OpenHistory reads the history file at path; a missing file is an empty
// history, and lines that do not parse (a write cut short) are skipped.
func OpenHistory(path string) (*History, error) {
	h := &History{path: path, limit: historyLimit}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 4*maxHistoryEntry)
	for sc.Scan() {
		h.lines++
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	if len(h.entries) > h.limit {
		h.entries = h.entries[len(h.entries)-h.limit:]
	}
	return h, nil
}

// Entries returns the remembered inputs, oldest first.
func (h *History) Entries() []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.entries...)
}

// Add remembers text, unless it repeats the last input or is too large.
// The file is appended to, and rewritten with only the last entries once
// it holds twice the limit.
func (h *History) Add(text string) error {
	if h == nil || text == "" || len(text) > maxHistoryEntry {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == text {
		return nil
	}
	h.entries = append(h.entries, text)
	if len(h.entries) > h.limit {
		h.entries = h.entries[len(h.entries)-h.limit:]
	}
	if h.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if h.lines+1 > 2*h.limit {
		return h.rewrite()
	}
	line, _ := json.Marshal(text)
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	h.lines++
	return nil
}

// rewrite replaces the file with the entries kept, through a temporary
// file renamed over it, so a crash leaves the old file or the new one.
func (h *History) rewrite() error {
	var b bytes.Buffer
	for _, e := range h.entries {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	h.lines = len(h.entries)
	return nil
}

// recall walks the history with Up and Down from the input line. pos is
// the entry shown, len(entries) for the line being written, which is kept
// in draft while older entries are shown.
type recall struct {
	entries []string
	pos     int
	draft   string
}

func (r *recall) reset(entries []string) {
	r.entries, r.pos, r.draft = entries, len(entries), ""
}

// older returns the entry before the one shown; current is what the input
// line holds now.
func (r *recall) older(current string) (string, bool) {
	if r.pos == 0 {
		return "", false
	}
	if r.pos == len(r.entries) {
		r.draft = current
	}
	r.pos--
	return r.entries[r.pos], true
}

// newer returns the entry after the one shown, or the draft after the
// newest.
func (r *recall) newer() (string, bool) {
	if r.pos >= len(r.entries) {
		return "", false
	}
	r.pos++
	if r.pos == len(r.entries) {
		return r.draft, true
	}
	return r.entries[r.pos], true
}
