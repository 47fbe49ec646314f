package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Output asks a model for its answer as one JSON object matching a schema:
// a structured answer (DESIGN §2; the Agents SDK's output_type). The engine
// (loop.Options.Output) asks for it the way the model takes it
// (OutputMode), checks what comes back and returns it decoded.
type Output struct {
	// Name names the answer's shape ("Person"): letters, digits, '_' and
	// '-', at most 64. In tool mode it is the name of the tool whose
	// arguments are the answer.
	Name string
	// Description says what the answer is, for the model.
	Description string
	// Schema is the JSON Schema of the answer; its root is an object.
	Schema json.RawMessage
	// Strict asks the provider to hold the answer to the schema exactly
	// (OpenAI's strict structured outputs), which it allows only for a
	// schema whose every object lists all its properties as required and
	// admits no others (StrictSchema).
	Strict bool
}

// OutputMode says how a model is asked for a structured answer.
type OutputMode string

// Output modes.
const (
	// OutputNative: the request carries the schema (Request.Output) and
	// the provider constrains the answer's text to it: Chat Completions
	// response_format json_schema, Responses text.format.
	OutputNative OutputMode = "native"
	// OutputTool: the answer is the arguments of a call to a tool named
	// after the output, forced (Request.ForceTool) on the round that must
	// answer: what every protocol with tools can do (Anthropic's forced
	// tool, a compatible server without response_format).
	OutputTool OutputMode = "tool"
)

// ParseOutputMode checks a mode's name; empty is valid (the model says).
func ParseOutputMode(s string) (OutputMode, error) {
	switch m := OutputMode(s); m {
	case "", OutputNative, OutputTool:
		return m, nil
	}
	return "", fmt.Errorf("unknown output mode %q; use %q or %q", s, OutputNative, OutputTool)
}

// OutputModer is implemented by a model that knows how its provider takes a
// structured answer. Wrappers of a model (WithRetry) pass it on.
type OutputModer interface {
	OutputMode() OutputMode
}

// OutputModeOf returns how m takes a structured answer: what it says, or
// OutputTool, which any model with tools can do.
func OutputModeOf(m Model) OutputMode {
	if om, ok := m.(OutputModer); ok {
		if mode := om.OutputMode(); mode != "" {
			return mode
		}
	}
	return OutputTool
}

var outputName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Check reports what is wrong with o, in words that say how to fix it.
func (o *Output) Check() error {
	if !outputName.MatchString(o.Name) {
		return fmt.Errorf("output name %q must be 1 to 64 letters, digits, '_' or '-'", o.Name)
	}
	var root map[string]any
	if err := json.Unmarshal(o.Schema, &root); err != nil {
		return fmt.Errorf("output %s: the schema is not a JSON object: %w", o.Name, err)
	}
	if t, _ := root["type"].(string); t != "object" {
		return fmt.Errorf("output %s: the schema's root must be {\"type\":\"object\",...} (providers take object answers only); wrap a list or a value in an object", o.Name)
	}
	if o.Strict && !StrictSchema(o.Schema) {
		return fmt.Errorf("output %s: Strict needs every object of the schema to require all its properties and set additionalProperties to false", o.Name)
	}
	return nil
}

// StrictSchema reports whether schema qualifies for strict structured
// outputs: every object in it requires all its properties and sets
// additionalProperties to false.
func StrictSchema(schema json.RawMessage) bool {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return false
	}
	return strictNode(root, 0)
}

func strictNode(n any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch v := n.(type) {
	case []any:
		for _, e := range v {
			if !strictNode(e, depth+1) {
				return false
			}
		}
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok || v["type"] == "object" {
			if ap, ok := v["additionalProperties"].(bool); !ok || ap {
				return false
			}
			req := map[string]bool{}
			list, _ := v["required"].([]any)
			for _, r := range list {
				if s, ok := r.(string); ok {
					req[s] = true
				}
			}
			for k := range props {
				if !req[k] {
					return false
				}
			}
		}
		for k, e := range v {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue // values, not schemas
			}
			if !strictNode(e, depth+1) {
				return false
			}
		}
	}
	return true
}

// OutputFromSchema makes the Output of a JSON Schema document, as given to
// rein run --schema: named by the schema's "title" (made a valid name), or
// else by name; described by its "description". Strict is set when the
// schema qualifies (StrictSchema). The result is checked (Output.Check).
func OutputFromSchema(raw []byte, name string) (*Output, error) {
	var doc struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	if doc.Title != "" {
		name = doc.Title
	}
	o := &Output{Name: OutputName(name), Description: doc.Description, Schema: json.RawMessage(raw), Strict: StrictSchema(raw)}
	if err := o.Check(); err != nil {
		return nil, err
	}
	return o, nil
}

// OutputName makes s a valid output name: letters, digits, '_' and '-'
// kept, spaces and punctuation as '_', anything else dropped, at most 64;
// "answer" when nothing is left.
func OutputName(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		case r == ' ' || r == '[' || r == ',' || r == '.' || r == '/':
			if len(b) > 0 && b[len(b)-1] != '_' {
				b = append(b, '_')
			}
		}
	}
	name := strings.Trim(string(b), "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "answer"
	}
	return name
}
