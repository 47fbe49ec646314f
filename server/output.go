package server

import (
	"bytes"
	"encoding/json"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// MaxOutputSchema bounds the output schema of turn/start: a schema is
// sent to the model with every request of the turn.
const MaxOutputSchema = 64 << 10

// turnOutput checks the output schema of turn/start and returns the
// structured answer it asks for; nil when the params have none. A schema
// that is too large, not an object schema, or that does not compile is
// refused as invalid params, with what to change.
func turnOutput(raw json.RawMessage) (*llm.Output, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if len(raw) > MaxOutputSchema {
		return nil, invalidParams("output: the schema is %d bytes; at most %d are taken", len(raw), MaxOutputSchema)
	}
	if raw[0] != '{' {
		return nil, invalidParams("output: the schema must be a JSON object, such as {\"type\":\"object\",\"properties\":{...}}")
	}
	out, err := llm.OutputFromSchema(raw, "answer")
	if err != nil {
		return nil, invalidParams("output: %v", err)
	}
	// The engine checks answers with the same validator: a schema it
	// cannot compile would fail the turn only after the model answered.
	if _, err := tool.NewValidator(tool.Spec{Name: out.Name, Schema: out.Schema}); err != nil {
		return nil, invalidParams("output: the schema does not compile: %v", err)
	}
	return out, nil
}
