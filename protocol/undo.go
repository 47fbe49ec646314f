package protocol

// MethodTurnUndo puts back the files a turn wrote through the file tools
// (the runtime's undo, as rein undo and the chat's /undo).
const MethodTurnUndo = "turn/undo"

// Errors of turn/undo. They sit apart from the other codes so that codes
// added elsewhere do not collide with them.
const (
	// CodeUndoConflict: files changed after the turn; nothing was
	// restored. Data.Conflicts names them; force restores anyway.
	CodeUndoConflict = -32020
	// CodeNothingToUndo: the thread has no turn whose file changes can be
	// undone (or the turn named has none left).
	CodeNothingToUndo = -32021
)

// TurnUndoParams are the params of turn/undo.
type TurnUndoParams struct {
	ThreadID string `json:"threadId"`
	// TurnID is the turn to undo; absent, the latest turn with file
	// changes not undone.
	TurnID string `json:"turnId,omitempty" jsonschema:"the turn to undo; absent, the latest with file changes not undone"`
	// Force restores over files changed after the turn (those changes are
	// lost).
	Force bool `json:"force,omitempty" jsonschema:"restore over files changed after the turn (those changes are lost)"`
}

// TurnUndoResult is the result of turn/undo.
type TurnUndoResult struct {
	TurnID string `json:"turnId"`
	// Restored are the files written back as they were before the turn;
	// Removed the files the turn created, removed again.
	Restored []string `json:"restored"`
	Removed  []string `json:"removed"`
	// Overwritten are files changed after the turn that force wrote over.
	Overwritten []string `json:"overwritten,omitempty"`
	// Skipped are files whose before-image was too large to keep.
	Skipped []string `json:"skipped,omitempty"`
	// Untracked says the turn ran commands whose changes undo cannot see.
	Untracked bool `json:"untracked,omitempty" jsonschema:"the turn ran commands (exec) whose changes are not reverted"`
	// Summary says what was done in one line.
	Summary string `json:"summary"`
}

// UndoConflict is a file changed after the turn, in an undoConflict
// error's data.
type UndoConflict struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}
