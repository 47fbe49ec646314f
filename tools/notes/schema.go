package notes

import (
	"encoding/json"

	"github.com/reinhq/rein/tool"
)

// specTool is a tool whose schema was adjusted after tool.New derived it:
// struct tags cannot list the user's notebooks.
type specTool struct {
	tool.Tool
	spec tool.Spec
}

func (t specTool) Spec() tool.Spec { return t.spec }

// Keys forwards to the wrapped tool, which declares a notebook's key.
func (t specTool) Keys(args json.RawMessage) tool.Keys { return tool.KeysOf(t.Tool, args) }

// withEnum returns t with the property prop limited to values. With no
// values, or a schema that does not decode (it comes from tool.New, so it
// always does), t is returned unchanged.
func withEnum(t tool.Tool, prop string, values []string) tool.Tool {
	if len(values) == 0 {
		return t
	}
	spec := t.Spec()
	var schema map[string]any
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		return t
	}
	props, _ := schema["properties"].(map[string]any)
	p, ok := props[prop].(map[string]any)
	if !ok {
		return t
	}
	p["enum"] = values
	b, err := json.Marshal(schema)
	if err != nil {
		return t
	}
	spec.Schema = b
	return specTool{Tool: t, spec: spec}
}
