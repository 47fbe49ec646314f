package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/llm"
)

// schemaMap decodes a tool's JSON Schema; an absent schema is an object
// without properties, which every server accepts.
func schemaMap(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return m, nil
}

// joinText joins two blocks of prose with a blank line.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return strings.TrimRight(a, "\n") + "\n\n" + b
}

// currentTurnStart returns the index of the first item of the turn being
// run: the items of the request's turn when items carry turn ids, otherwise
// the items after the last user input.
func currentTurnStart(req *llm.Request) int {
	if req.TurnID != "" {
		for i, it := range req.All() {
			if it.TurnID == req.TurnID {
				return i
			}
		}
	}
	for i := req.Len() - 1; i >= 0; i-- {
		it := req.At(i)
		if it.Role == llm.RoleUser && it.Origin == llm.OriginInput {
			return i
		}
	}
	return 0
}

// argsOrEmpty sends "{}" for a call without arguments: servers reject an
// empty arguments string on replay.
func argsOrEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
