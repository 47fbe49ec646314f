package protocol_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
)

// A structured answer on the wire: the turn's output is the JSON object
// itself, not a string or bytes; a text turn has none; turn/start's output
// is the schema as the client sent it.
func TestStructuredAnswerOnTheWire(t *testing.T) {
	typed := record.Turn{ID: "turn_4", ThreadID: "thread_a", Seq: 4, Status: record.StatusCompleted, StopReason: record.StopFinished,
		Answer: `{"name":"Ada","age":36}`, Output: json.RawMessage(`{"name":"Ada","age":36}`), Rounds: 1, ToolSteps: 1}
	plain := record.Turn{ID: "turn_5", ThreadID: "thread_a", Seq: 5, Status: record.StatusCompleted, StopReason: record.StopFinished, Answer: "done", Rounds: 1}
	start := protocol.TurnStartParams{ThreadID: "thread_a", Input: []protocol.InputPart{{Type: "text", Text: "who?"}},
		Output: json.RawMessage(`{"title":"Person","type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	for _, v := range []any{start, protocol.TurnOf(&typed), protocol.TurnOf(&plain)} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "output.json", b.Bytes())
}
