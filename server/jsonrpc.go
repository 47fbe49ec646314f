package server

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
)

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

// message is any JSON-RPC message a client sends: a request (with id) or a
// notification (without). The jsonrpc member is accepted when absent.
type message struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// response is a reply to a request.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// notification is a message the server sends without expecting a reply.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

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
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// errOverloaded is the answer to a request that arrives while the
// connection's outgoing queue is full.
var errOverloaded = &Error{Code: CodeOverloaded, Message: "overloaded, retry", Data: &ErrorData{Kind: "overloaded"}}

// invalidParams reports params that do not decode or lack a field.
func invalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: &ErrorData{Kind: "invalidParams"}}
}

// toError maps an error of the scheduler to a JSON-RPC error.
func toError(err error) *Error {
	var rpc *Error
	var mm *session.TurnMismatchError
	var pm *loop.PauseMismatchError
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.As(err, &mm):
		return &Error{Code: CodeTurnMismatch, Message: err.Error(), Data: &ErrorData{Kind: "turnMismatch", ExpectedTurnID: mm.Expected, ActiveTurnID: mm.Active}}
	case errors.Is(err, session.ErrNoActiveTurn):
		return &Error{Code: CodeNoActiveTurn, Message: err.Error(), Data: &ErrorData{Kind: "noActiveTurn"}}
	case errors.Is(err, session.ErrThreadNotFound):
		return &Error{Code: CodeThreadNotFound, Message: err.Error(), Data: &ErrorData{Kind: "threadNotFound"}}
	case errors.Is(err, session.ErrTurnBusy):
		return &Error{Code: CodeTurnBusy, Message: err.Error(), Data: &ErrorData{Kind: "turnBusy"}}
	case errors.Is(err, session.ErrTurnPaused):
		return &Error{Code: CodeTurnPaused, Message: err.Error(), Data: &ErrorData{Kind: "turnPaused"}}
	case errors.As(err, &pm):
		return &Error{Code: CodePauseMismatch, Message: err.Error(), Data: &ErrorData{Kind: "pauseMismatch", ExpectedTurnID: pm.WantTurn}}
	case errors.Is(err, loop.ErrNotPaused):
		return &Error{Code: CodeNotPaused, Message: err.Error(), Data: &ErrorData{Kind: "notPaused"}}
	case errors.Is(err, session.ErrEmptyInput), errors.Is(err, loop.ErrNoDecision):
		return &Error{Code: CodeInvalidParams, Message: err.Error(), Data: &ErrorData{Kind: "invalidParams"}}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Data: &ErrorData{Kind: "internal"}}
}
