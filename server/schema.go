package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/protocol"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

//go:generate go test -run TestSchemaIsCurrent -update

// A method's or notification's types, for the schema.
type (
	methodTypes struct {
		name           string
		params, result any
		doc            string
	}
	notificationTypes struct {
		name   string
		params any
		doc    string
	}
)

// protocolMethods lists every method with its params and result, in the
// order of DESIGN §9.
var protocolMethods = []methodTypes{
	{protocol.MethodInitialize, protocol.InitializeParams{}, protocol.InitializeResult{}, "The first request of a connection."},
	{protocol.MethodThreadStart, protocol.ThreadStartParams{}, protocol.ThreadResult{}, "Creates a thread; the connection receives its notifications."},
	{protocol.MethodThreadResume, protocol.ThreadResumeParams{}, protocol.ThreadResult{}, "Loads a stored thread (a paused turn can then be answered); the connection receives its notifications."},
	{protocol.MethodThreadList, protocol.ThreadListParams{}, protocol.ThreadListResult{}, "Lists threads, most recently updated first."},
	{protocol.MethodThreadRead, protocol.ThreadReadParams{}, protocol.ThreadReadResult{}, "Reads a thread with its turns and items."},
	{protocol.MethodTurnStart, protocol.TurnStartParams{}, protocol.TurnStartResult{}, "Starts a turn: inProgress, or queued while a turn runs."},
	{protocol.MethodTurnSteer, protocol.TurnSteerParams{}, protocol.TurnSteerResult{}, "Adds input to the running turn; the input is persisted before the answer."},
	{protocol.MethodTurnInterrupt, protocol.TurnInterruptParams{}, protocol.EmptyResult{}, "Cancels a turn; it later completes interrupted."},
	{protocol.MethodThreadCompact, protocol.ThreadCompactParams{}, protocol.TurnStartResult{}, "Compacts the thread's context now, as a turn of its own (inProgress, or queued behind the running turn); it completes with stop reason compacted."},
	{protocol.MethodPauseAnswer, protocol.PauseAnswerParams{}, protocol.EmptyResult{}, "Answers a paused turn's questions; the same turn goes on."},
	{protocol.MethodApprovalAnswer, protocol.ApprovalAnswerParams{}, protocol.EmptyResult{}, "Answers a paused turn's approval; the same turn goes on."},
	{protocol.MethodTurnTrace, protocol.TurnTraceParams{}, protocol.TurnTraceResult{}, "Returns a turn's trace: the self-contained timeline page rein trace writes, kept when the turn ends or pauses."},
	{protocol.MethodTurnUndo, protocol.TurnUndoParams{}, protocol.TurnUndoResult{}, "Puts back the files a turn wrote through the file tools; refuses, naming them, when files changed since, unless force."},
	{protocol.MethodThreadUnsubscribe, protocol.ThreadUnsubscribeParams{}, protocol.EmptyResult{}, "Ends the connection's notifications of a thread, so the server may forget it while idle; idempotent."},
}

// protocolNotifications lists every notification with its params.
var protocolNotifications = []notificationTypes{
	{protocol.NotifyTurnStarted, protocol.TurnNotification{}, "A turn started running."},
	{protocol.NotifyTurnCompleted, protocol.TurnNotification{}, "A turn ended (completed, interrupted, failed) or paused."},
	{protocol.NotifyItemStarted, protocol.ItemNotification{}, "An item began: a streamed agent message, a running tool, or a stored item."},
	{protocol.NotifyItemDelta, protocol.ItemDelta{}, "Text, thinking or call arguments streamed into an item."},
	{protocol.NotifyItemCompleted, protocol.ItemNotification{}, "An item is stored; authoritative."},
	{protocol.NotifyPauseRequested, protocol.PauseRequested{}, "The turn waits for pause/answer."},
	{protocol.NotifyApprovalRequested, protocol.ApprovalRequested{}, "The turn waits for approval/answer."},
	{protocol.NotifyUsageUpdated, protocol.UsageUpdated{}, "A round's token usage."},
	{protocol.NotifyContextUpdated, protocol.ContextUpdated{}, "The context budget of the latest request."},
	{protocol.NotifyWarning, protocol.Warning{}, "Something the client should know (settlement, retries, dropped notifications)."},
	{protocol.NotifySubagent, protocol.SubagentEvent{}, "What a sub-agent run by the task tool did, under the parent's call."},
}

// schemaOptions say how the protocol's types that are JSON themselves
// appear in the schema: a json.RawMessage on the wire is a JSON object (an
// output schema, a structured answer), not the bytes Go keeps it in.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
}}

// Schema returns the protocol's JSON Schema, generated from this package's
// types: every params, result and error type under $defs, and which method
// and notification uses which in x-methods and x-notifications.
func Schema() ([]byte, error) {
	defs := map[string]*jsonschema.Schema{}
	add := func(v any) (map[string]string, error) {
		t := reflect.TypeOf(v)
		name := t.Name()
		if _, ok := defs[name]; !ok {
			s, err := jsonschema.ForType(t, schemaOptions)
			if err != nil {
				return nil, fmt.Errorf("server: schema of %s: %w", name, err)
			}
			s.Title = name
			defs[name] = s
		}
		return map[string]string{"$ref": "#/$defs/" + name}, nil
	}
	type method struct {
		Description string            `json:"description"`
		Params      map[string]string `json:"params"`
		Result      map[string]string `json:"result"`
	}
	type note struct {
		Description string            `json:"description"`
		Params      map[string]string `json:"params"`
	}
	ms := map[string]method{}
	for _, m := range protocolMethods {
		p, err := add(m.params)
		if err != nil {
			return nil, err
		}
		r, err := add(m.result)
		if err != nil {
			return nil, err
		}
		ms[m.name] = method{Description: m.doc, Params: p, Result: r}
	}
	ns := map[string]note{}
	for _, n := range protocolNotifications {
		p, err := add(n.params)
		if err != nil {
			return nil, err
		}
		ns[n.name] = note{Description: n.doc, Params: p}
	}
	if _, err := add(protocol.Error{}); err != nil {
		return nil, err
	}
	doc := struct {
		Schema          string                        `json:"$schema"`
		ID              string                        `json:"$id"`
		Title           string                        `json:"title"`
		Description     string                        `json:"description"`
		ProtocolVersion string                        `json:"x-protocolVersion"`
		Methods         map[string]method             `json:"x-methods"`
		Notifications   map[string]note               `json:"x-notifications"`
		Defs            map[string]*jsonschema.Schema `json:"$defs"`
	}{
		Schema:          "https://json-schema.org/draft/2020-12/schema",
		ID:              "https://github.com/reinhq/rein/docs/protocol.schema.json",
		Title:           "rein app-server protocol",
		Description:     "JSON-RPC 2.0 over stdio (one object per line) or WebSocket (one object per text frame). Generated from package server; do not edit.",
		ProtocolVersion: protocol.ProtocolVersion,
		Methods:         ms,
		Notifications:   ns,
		Defs:            defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("server: schema: %w", err)
	}
	return buf.Bytes(), nil
}
