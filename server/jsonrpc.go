package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/protocol"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/session"
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
	Error   *protocol.Error `json:"error,omitempty"`
}

// notification is a message the server sends without expecting a reply.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// errOverloaded is the answer to a request that arrives while the
// connection's outgoing queue is full.
var errOverloaded = &protocol.Error{Code: protocol.CodeOverloaded, Message: "overloaded, retry", Data: &protocol.ErrorData{Kind: "overloaded"}}

// invalidParams reports params that do not decode or lack a field.
func invalidParams(format string, args ...any) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: &protocol.ErrorData{Kind: "invalidParams"}}
}

// toError maps an error of the scheduler to a JSON-RPC error.
func toError(err error) *protocol.Error {
	var rpc *protocol.Error
	var mm *session.TurnMismatchError
	var pm *loop.PauseMismatchError
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.As(err, &mm):
		return &protocol.Error{Code: protocol.CodeTurnMismatch, Message: err.Error(), Data: &protocol.ErrorData{Kind: "turnMismatch", ExpectedTurnID: mm.Expected, ActiveTurnID: mm.Active}}
	case errors.Is(err, session.ErrNoActiveTurn):
		return &protocol.Error{Code: protocol.CodeNoActiveTurn, Message: err.Error(), Data: &protocol.ErrorData{Kind: "noActiveTurn"}}
	case errors.Is(err, session.ErrThreadNotFound):
		return &protocol.Error{Code: protocol.CodeThreadNotFound, Message: err.Error(), Data: &protocol.ErrorData{Kind: "threadNotFound"}}
	case errors.Is(err, session.ErrTurnBusy):
		return &protocol.Error{Code: protocol.CodeTurnBusy, Message: err.Error(), Data: &protocol.ErrorData{Kind: "turnBusy"}}
	case errors.Is(err, session.ErrTurnPaused):
		return &protocol.Error{Code: protocol.CodeTurnPaused, Message: err.Error(), Data: &protocol.ErrorData{Kind: "turnPaused"}}
	case errors.As(err, &pm):
		return &protocol.Error{Code: protocol.CodePauseMismatch, Message: err.Error(), Data: &protocol.ErrorData{Kind: "pauseMismatch", ExpectedTurnID: pm.WantTurn}}
	case errors.Is(err, loop.ErrNotPaused):
		return &protocol.Error{Code: protocol.CodeNotPaused, Message: err.Error(), Data: &protocol.ErrorData{Kind: "notPaused"}}
	case errors.Is(err, session.ErrTooManySteers):
		return &protocol.Error{Code: protocol.CodeOverloaded, Message: err.Error(), Data: &protocol.ErrorData{Kind: "overloaded"}}
	case errors.Is(err, session.ErrEmptyInput), errors.Is(err, loop.ErrNoDecision), errors.Is(err, session.ErrSubagentThread):
		return &protocol.Error{Code: protocol.CodeInvalidParams, Message: err.Error(), Data: &protocol.ErrorData{Kind: "invalidParams"}}
	}
	return &protocol.Error{Code: protocol.CodeInternal, Message: err.Error(), Data: &protocol.ErrorData{Kind: "internal"}}
}
