package textcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/reinhq/rein/llm"
)

// The canonical spelling written by Format: DeepSeek V4's marker and wrapper.
const (
	marker  = "｜DSML｜"
	wrapper = "tool_calls"
)

// Format writes calls as DSML, for replaying a text-mode round to the model
// in the format it writes. String arguments are written verbatim with
// string="true", others as JSON with string="false"; argument order is kept.
// Arguments that are not a JSON object are left out. Parse reads the result
// back to the same calls, unless a string contains a DSML close tag.
func Format(calls []llm.Call) string {
	if len(calls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<" + marker + wrapper + ">\n")
	for _, c := range calls {
		b.WriteString("<" + marker + "invoke name=" + quoteAttr(c.Name) + ">\n")
		fields, _ := objectFields(c.Args)
		for _, fd := range fields {
			b.WriteString("<" + marker + "parameter name=" + quoteAttr(fd.name))
			var s string
			if len(fd.value) > 0 && fd.value[0] == '"' && json.Unmarshal(fd.value, &s) == nil {
				b.WriteString(` string="true">`)
				b.WriteString(s)
			} else {
				b.WriteString(` string="false">`)
				var cb bytes.Buffer
				if json.Compact(&cb, fd.value) == nil {
					b.Write(cb.Bytes())
				} else {
					b.Write(fd.value)
				}
			}
			b.WriteString("</" + marker + "parameter>\n")
		}
		b.WriteString("</" + marker + "invoke>\n")
	}
	b.WriteString("</" + marker + wrapper + ">")
	return b.String()
}

type field struct {
	name  string
	value json.RawMessage
}

// objectFields returns the members of a JSON object in order. An empty text
// is an object without members.
func objectFields(args string) ([]field, error) {
	if strings.TrimSpace(args) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("textcall: arguments are not a JSON object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{name, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("textcall: text after the arguments object")
	}
	return out, nil
}

// quoteAttr quotes an attribute value with double quotes, or single quotes
// when it holds a double quote.
func quoteAttr(s string) string {
	if strings.Contains(s, `"`) {
		return "'" + s + "'"
	}
	return `"` + s + `"`
}

// Instructions describes the call format and the tools for a system prompt,
// for providers driven in text tool mode.
func Instructions(specs []llm.ToolSpec) string {
	var b strings.Builder
	b.WriteString(`# Tools

You can call the tools listed below. To call tools, end your reply with one block in exactly this format:

<｜DSML｜tool_calls>
<｜DSML｜invoke name="TOOL_NAME">
<｜DSML｜parameter name="PARAMETER" string="true">text, written as is</｜DSML｜parameter>
<｜DSML｜parameter name="PARAMETER" string="false">JSON: a number, boolean, array or object</｜DSML｜parameter>
</｜DSML｜invoke>
</｜DSML｜tool_calls>

Write a string parameter with string="true" and its text as is, without quotes or escaping. Write every other parameter with string="false" and its value as JSON. To call several tools at once, put several invoke elements in the block. Write nothing after the block, and never write tool calls inside your reasoning. The results come back in the next user message as <tool_result name="TOOL_NAME"> elements, in the order of the calls.

## Available tools
`)
	for _, sp := range specs {
		if sp.Builtin != "" {
			// The provider runs its own tools; they are not called in text.
			continue
		}
		b.WriteString("\n### " + sp.Name + "\n")
		if d := strings.TrimSpace(sp.Description); d != "" {
			b.WriteString(d + "\n")
		}
		if len(sp.Schema) > 0 {
			var cb bytes.Buffer
			if json.Compact(&cb, sp.Schema) == nil {
				b.WriteString("Parameters (JSON Schema): " + cb.String() + "\n")
			}
		}
	}
	return b.String()
}

// FormatResults writes the results of a text-mode round as the user-role text
// that carries them back to the model, one element per result in order:
//
//	<tool_result name="get_weather">
//	Sunny, 24 °C
//	</tool_result>
//
// A result whose status is not ok carries it: status="error".
func FormatResults(results []llm.Result) string {
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("<tool_result name=" + quoteAttr(r.Name))
		if r.Status != "" && r.Status != llm.ResultOK {
			b.WriteString(" status=" + quoteAttr(string(r.Status)))
		}
		b.WriteString(">\n")
		b.WriteString(r.Content)
		if r.Content != "" && !strings.HasSuffix(r.Content, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("</tool_result>")
	}
	return b.String()
}
