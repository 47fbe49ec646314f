package kb

import (
	"encoding/json"

	"github.com/reinhq/rein/tool"
)

// specTool is a tool whose spec was adjusted after tool.New derived it from
// the input struct: struct tags cannot say which bases are attached.
type specTool struct {
	tool.Tool
	spec tool.Spec
}

func (t specTool) Spec() tool.Spec { return t.spec }

// withSchema returns t with edit applied to the properties of its schema.
// The schema comes from tool.New, so it always decodes; if it ever did not,
// t is returned unchanged rather than with a broken schema.
func withSchema(t tool.Tool, edit func(props map[string]any)) tool.Tool {
	spec := t.Spec()
	var schema map[string]any
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		return t
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		return t
	}
	edit(props)
	b, err := json.Marshal(schema)
	if err != nil {
		return t
	}
	spec.Schema = b
	return specTool{Tool: t, spec: spec}
}

func setProp(props map[string]any, name, key string, v any) {
	if p, ok := props[name].(map[string]any); ok {
		p[key] = v
	}
}
