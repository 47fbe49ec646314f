package protocol

import "fmt"

// JSON-RPC 2.0 error codes: the standard ones, then the server's.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeOverloaded answers a request while the connection's outgoing
	// queue is full (the client stopped reading): retry later.
	CodeOverloaded     = -32001
	CodeNotInitialized = -32002
	CodeNoActiveTurn   = -32010
	CodeTurnMismatch   = -32011
	CodeThreadNotFound = -32012
	CodeTurnPaused     = -32013
	CodePauseMismatch  = -32014
	CodeNotPaused      = -32015
	// CodeTurnBusy answers a turn that cannot run because another process
	// sharing the store runs a turn of the thread (session.ErrTurnBusy).
	CodeTurnBusy = -32016
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData says which error it is in a stable word, for clients that
// branch on it, with the ids involved.
type ErrorData struct {
	Kind           string `json:"kind"`
	ExpectedTurnID string `json:"expectedTurnId,omitempty"`
	ActiveTurnID   string `json:"activeTurnId,omitempty"`
	// Conflicts are the files an undoConflict error refused to
	// overwrite.
	Conflicts []UndoConflict `json:"conflicts,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }
