package undo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"sync"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// Tracker keeps the before-images of what a workspace's file tools write,
// in a Journal. One Tracker serves every turn in its workspace.
type Tracker struct {
	ws *sandbox.Workspace
	j  Journal
	// MaxFile and MaxTurn bound a before-image and a turn's before-images
	// (DefaultMaxFile, DefaultMaxTurn when 0).
	MaxFile, MaxTurn int64

	mu sync.Mutex
	// seen are the (turn, path) pairs whose first touch is kept, so later
	// writes in the turn skip reading the file before.
	seen map[seenKey]bool
}

type seenKey struct{ turn, path string }

// maxSeen bounds the Tracker's memory of first touches; past it the map
// starts over (a file is then read once more, AddUndo keeps the first).
const maxSeen = 4096

// NewTracker returns a tracker of the workspace ws keeping its entries in j.
func NewTracker(ws *sandbox.Workspace, j Journal) *Tracker {
	return &Tracker{ws: ws, j: j, seen: make(map[seenKey]bool)}
}

// FileTools are the tools whose writes are tracked file by file: their
// "path" argument names the one file they write.
var FileTools = []string{"write_file", "edit_file"}

// ExecTools are the tools that run commands in the workspace, whose
// changes cannot be tracked file by file.
var ExecTools = []string{"exec", "code_execution"}

// Wrap returns t tracked: a file tool keeps the before-image of the file
// it writes, an exec tool marks its turn untracked. Other tools are
// returned as they are.
func (tr *Tracker) Wrap(t tool.Tool) tool.Tool {
	name := t.Spec().Name
	for _, n := range FileTools {
		if n == name {
			return &fileTool{inner: t, tr: tr}
		}
	}
	for _, n := range ExecTools {
		if n == name {
			return &execTool{inner: t, tr: tr}
		}
	}
	return t
}

// fileTool is a file tool whose writes are tracked. It keeps the inner
// tool's keys and decoding, so the dispatcher schedules it as before.
type fileTool struct {
	inner tool.Tool
	tr    *Tracker
}

func (f *fileTool) Spec() tool.Spec { return f.inner.Spec() }

func (f *fileTool) Keys(args json.RawMessage) tool.Keys { return tool.KeysOf(f.inner, args) }

func (f *fileTool) Decode(args json.RawMessage) (any, error) {
	if d, ok := f.inner.(tool.Decoder); ok {
		return d.Decode(args)
	}
	return nil, nil
}

func (f *fileTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	if _, ok := f.inner.(tool.Decoder); !ok {
		c.Input = nil
	}
	rel, ok := f.tr.path(c)
	if !ok {
		return f.inner.Run(ctx, c)
	}
	note, err := f.tr.before(ctx, c.ThreadID, c.TurnID, rel)
	if err != nil {
		// Not kept, not written: a change that cannot be undone is not
		// made behind the user's back.
		return tool.Output{Text: fmt.Sprintf("%s was not written: its content before this turn could not be kept for undo: %v", rel, err), Failed: true}, nil
	}
	out, runErr := f.inner.Run(ctx, c)
	if err := f.tr.after(ctx, c.ThreadID, c.TurnID, rel); err != nil && runErr == nil && !out.Failed {
		out.Text += fmt.Sprintf("\n(undo: what this call left in %s could not be noted: %v; undoing this turn will treat the file as changed since)", rel, err)
	}
	if note != "" && runErr == nil && !out.Failed {
		out.Text += "\n" + note
	}
	return out, runErr
}

// path returns the workspace-relative path call c writes, and whether the
// call is one to track (it runs in a turn and names a file).
func (tr *Tracker) path(c tool.Call) (string, bool) {
	if c.ThreadID == "" || c.TurnID == "" {
		return "", false
	}
	var in struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Args, &in) != nil || in.Path == "" {
		return "", false
	}
	rel, err := tr.ws.Rel(in.Path)
	if err != nil || rel == "." {
		return "", false
	}
	return rel, true
}

// before keeps the before-image of rel the first time the turn touches it.
// note is what to tell about it (a file too large to keep).
func (tr *Tracker) before(ctx context.Context, thread, turn, rel string) (note string, err error) {
	k := seenKey{turn, rel}
	tr.mu.Lock()
	seen := tr.seen[k]
	tr.mu.Unlock()
	if seen {
		return "", nil
	}
	if tr.ws.Check(rel, true) != nil {
		// Never writable (git's metadata, the deny list): the tool refuses
		// it, and undo has nothing to put back, nor a copy to keep.
		return "", nil
	}
	e := Entry{Thread: thread, Turn: turn, Kind: KindFile, Path: rel}
	data, err := tr.ws.ReadFile(rel)
	switch {
	case err == nil:
		e.Existed, e.Before = true, data
		if fi, serr := tr.ws.Stat(rel); serr == nil {
			e.Mode = uint32(fi.Mode().Perm())
		}
	case errors.Is(err, iofs.ErrNotExist):
	default:
		// Unreadable (denied, a directory): the tool refuses it too, and
		// there is nothing to keep.
		return "", nil
	}
	maxFile, maxTurn := tr.limits()
	if int64(len(e.Before)) > maxFile {
		e.Before, e.TooLarge = nil, true
		note = fmt.Sprintf("(undo: %s is larger than %d MiB, so its content before this turn was not kept; undoing this turn will not restore it)", rel, maxFile>>20)
	} else if len(e.Before) > 0 {
		size, err := tr.j.UndoSize(ctx, thread, turn)
		if err != nil {
			return "", err
		}
		if size+int64(len(e.Before)) > maxTurn {
			e.Before, e.TooLarge = nil, true
			note = fmt.Sprintf("(undo: this turn's kept files passed %d MiB, so %s before it was not kept; undoing this turn will not restore it)", maxTurn>>20, rel)
		}
	}
	if _, err := tr.j.AddUndo(ctx, e); err != nil {
		return "", err
	}
	tr.mu.Lock()
	if len(tr.seen) >= maxSeen {
		clear(tr.seen)
	}
	tr.seen[k] = true
	tr.mu.Unlock()
	return note, nil
}

// after notes what the turn left at rel.
func (tr *Tracker) after(ctx context.Context, thread, turn, rel string) error {
	h, err := hashOf(tr.ws, rel)
	if err != nil {
		return err
	}
	return tr.j.SetUndoAfter(ctx, thread, turn, rel, h)
}

func (tr *Tracker) limits() (file, turn int64) {
	file, turn = tr.MaxFile, tr.MaxTurn
	if file <= 0 {
		file = DefaultMaxFile
	}
	if turn <= 0 {
		turn = DefaultMaxTurn
	}
	return file, turn
}

// hashOf returns the SHA-256 of the file rel in ws, "" when there is none.
func hashOf(ws *sandbox.Workspace, rel string) (string, error) {
	data, err := ws.ReadFile(rel)
	if errors.Is(err, iofs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return hashBytes(data), nil
}

// hashBytes is the SHA-256 (hex) of data, as entries note what a turn left.
func hashBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// execTool is a command tool: its turn is marked as one whose changes undo
// cannot fully see.
type execTool struct {
	inner tool.Tool
	tr    *Tracker
}

func (x *execTool) Spec() tool.Spec { return x.inner.Spec() }

func (x *execTool) Keys(args json.RawMessage) tool.Keys { return tool.KeysOf(x.inner, args) }

func (x *execTool) Decode(args json.RawMessage) (any, error) {
	if d, ok := x.inner.(tool.Decoder); ok {
		return d.Decode(args)
	}
	return nil, nil
}

func (x *execTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	if _, ok := x.inner.(tool.Decoder); !ok {
		c.Input = nil
	}
	if c.ThreadID != "" && c.TurnID != "" {
		k := seenKey{c.TurnID, "\x00exec"}
		x.tr.mu.Lock()
		seen := x.tr.seen[k]
		x.tr.mu.Unlock()
		if !seen {
			if _, err := x.tr.j.AddUndo(ctx, Entry{Thread: c.ThreadID, Turn: c.TurnID, Kind: KindExec}); err == nil {
				x.tr.mu.Lock()
				x.tr.seen[k] = true
				x.tr.mu.Unlock()
			}
		}
	}
	return x.inner.Run(ctx, c)
}
