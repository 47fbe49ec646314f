package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"go.yaml.in/yaml/v3"
)

// Load reads a script file, YAML or JSON, and returns a model replaying it.
func Load(path string, opts ...Option) (*Model, error) {
	s, err := LoadScript(path)
	if err != nil {
		return nil, err
	}
	return New(s, opts...), nil
}

// Parse reads a script, YAML or JSON, and returns a model replaying it.
func Parse(data []byte, opts ...Option) (*Model, error) {
	s, err := ParseScript(data)
	if err != nil {
		return nil, err
	}
	return New(s, opts...), nil
}

// MaxScriptSize bounds a script file LoadScript reads (16 MiB): a path
// such as /dev/zero must not read for ever.
const MaxScriptSize = 16 << 20

// LoadScript reads a script file, YAML or JSON, and checks it as
// [ParseScript] does. It reads only a regular file of at most
// MaxScriptSize bytes, and its errors name the file and the line, never
// the file's contents.
func LoadScript(path string) (Script, error) {
	data, err := readScript(path)
	if err != nil {
		return Script{}, err
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScript reads a script in YAML or JSON (a JSON file is read as the
// YAML it also is) and checks it: unknown fields, wrong types and invalid
// values are errors naming the line and the field. No error quotes the
// script's bytes: whoever named the file may not be whoever may read it.
func ParseScript(data []byte) (Script, error) {
	data, err := jsonAsYAML(data)
	if err != nil {
		return Script{}, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Script{}, yamlProblem(err)
	}
	if len(doc.Content) == 0 {
		return Script{}, errors.New("the script is empty; it needs at least `rounds:`")
	}
	d := decoder{budget: maxNodes}
	var s Script
	if err := d.script(doc.Content[0], &s); err != nil {
		return Script{}, err
	}
	if _, err := compile(s); err != nil {
		return Script{}, err
	}
	return s, nil
}

// maxNodes bounds the nodes a script may expand to through YAML aliases, so
// a few lines of anchors cannot make parsing run for ever.
const maxNodes = 1 << 17

// decoder turns a YAML node tree into a Script. It is written out by hand,
// rather than left to yaml's struct decoding, so errors speak the script's
// words ("round 2, call 1: unknown field ...") and durations read as "50ms".
type decoder struct {
	budget int
}

func (d *decoder) script(n *yaml.Node, s *Script) error {
	return d.mapping(n, "script", []string{"model", "chunk", "delay", "rounds"}, func(key string, v *yaml.Node, at string) (err error) {
		switch key {
		case "model":
			s.Model, err = str(v, at)
		case "chunk":
			s.Chunk, err = integer(v, at)
		case "delay":
			s.Delay, err = duration(v, at)
		case "rounds":
			err = d.sequence(v, at, func(i int, v *yaml.Node) error {
				var r Round
				err := d.round(v, fmt.Sprintf("round %d", i+1), &r)
				s.Rounds = append(s.Rounds, r)
				return err
			})
		}
		return err
	})
}

var roundFields = []string{"thinking", "text", "calls", "finish", "usage", "chunk", "delay", "hold", "repeat", "error", "expect"}

func (d *decoder) round(n *yaml.Node, where string, r *Round) error {
	r.line = n.Line
	return d.mapping(n, where, roundFields, func(key string, v *yaml.Node, at string) (err error) {
		switch key {
		case "thinking":
			r.Thinking, err = str(v, at)
		case "text":
			r.Text, err = str(v, at)
		case "calls":
			err = d.sequence(v, at, func(i int, v *yaml.Node) error {
				var c Call
				err := d.call(v, fmt.Sprintf("%s, call %d", where, i+1), &c)
				r.Calls = append(r.Calls, c)
				return err
			})
		case "finish":
			var f string
			f, err = str(v, at)
			r.Finish = llm.FinishReason(f)
		case "usage":
			err = d.usage(v, at, &r.Usage)
		case "chunk":
			r.Chunk, err = integer(v, at)
		case "delay":
			r.Delay, err = duration(v, at)
		case "hold":
			r.Hold, err = duration(v, at)
		case "repeat":
			r.Repeat, err = integer(v, at)
		case "error":
			r.Error = new(ErrorSpec)
			err = d.errorSpec(v, at, r.Error)
		case "expect":
			err = d.sequence(v, at, func(i int, v *yaml.Node) error {
				var e Expect
				err := d.expect(v, fmt.Sprintf("%s, expect %d", where, i+1), &e)
				r.Expect = append(r.Expect, e)
				return err
			})
		}
		return err
	})
}

func (d *decoder) call(n *yaml.Node, where string, c *Call) error {
	return d.mapping(n, where, []string{"id", "name", "args", "raw_args"}, func(key string, v *yaml.Node, at string) (err error) {
		switch key {
		case "id":
			c.ID, err = str(v, at)
		case "name":
			c.Name, err = str(v, at)
		case "args":
			if v.Kind != yaml.MappingNode {
				return errAt(v, at, "want a mapping of arguments, got %s (use raw_args for argument text)", describe(v))
			}
			var b bytes.Buffer
			if err := d.json(&b, v, at, 0); err != nil {
				return err
			}
			c.Args = json.RawMessage(b.Bytes())
		case "raw_args":
			c.RawArgs, err = str(v, at)
		}
		return err
	})
}

func (d *decoder) usage(n *yaml.Node, where string, u *llm.Usage) error {
	fields := []string{"input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens", "reasoning_tokens"}
	return d.mapping(n, where, fields, func(key string, v *yaml.Node, at string) error {
		i, err := integer(v, at)
		if err != nil {
			return err
		}
		if i < 0 {
			return errAt(v, at, "want 0 or more, got %d", i)
		}
		switch key {
		case "input_tokens":
			u.InputTokens = int64(i)
		case "output_tokens":
			u.OutputTokens = int64(i)
		case "cached_input_tokens":
			u.CachedInputTokens = int64(i)
		case "cache_write_tokens":
			u.CacheWriteTokens = int64(i)
		case "reasoning_tokens":
			u.ReasoningTokens = int64(i)
		}
		return nil
	})
}

func (d *decoder) errorSpec(n *yaml.Node, where string, e *ErrorSpec) error {
	return d.mapping(n, where, []string{"kind", "status", "message", "retry_after", "after"}, func(key string, v *yaml.Node, at string) (err error) {
		switch key {
		case "kind":
			var k string
			k, err = str(v, at)
			e.Kind = llm.ErrorKind(k)
		case "status":
			e.Status, err = integer(v, at)
		case "message":
			e.Message, err = str(v, at)
		case "retry_after":
			e.RetryAfter, err = duration(v, at)
		case "after":
			e.After, err = integer(v, at)
		}
		return err
	})
}

func (d *decoder) expect(n *yaml.Node, where string, e *Expect) error {
	fields := []string{"result", "last_user", "system", "tool_choice", "tools", "tools_include", "phase"}
	return d.mapping(n, where, fields, func(key string, v *yaml.Node, at string) (err error) {
		var s string
		switch key {
		case "result":
			e.Result = new(ResultExpect)
			err = d.result(v, at, e.Result)
		case "last_user":
			e.LastUser = new(TextExpect)
			err = d.text(v, at, e.LastUser)
		case "system":
			e.System = new(TextExpect)
			err = d.text(v, at, e.System)
		case "tool_choice":
			s, err = str(v, at)
			e.ToolChoice = llm.ToolChoice(s)
		case "tools":
			e.Tools, err = d.names(v, at)
		case "tools_include":
			e.ToolsInclude, err = d.names(v, at)
		case "phase":
			s, err = str(v, at)
			e.Phase = llm.Phase(s)
		}
		return err
	})
}

// text reads a text expectation; a bare string means contains.
func (d *decoder) text(n *yaml.Node, where string, t *TextExpect) (err error) {
	if n.Kind == yaml.ScalarNode {
		t.Contains, err = str(n, where)
		return err
	}
	return d.mapping(n, where, []string{"contains", "equals"}, func(key string, v *yaml.Node, at string) (err error) {
		switch key {
		case "contains":
			t.Contains, err = str(v, at)
		case "equals":
			t.Equals, err = str(v, at)
		}
		return err
	})
}

// result reads a result expectation; a bare string means the latest result
// contains it.
func (d *decoder) result(n *yaml.Node, where string, r *ResultExpect) (err error) {
	if n.Kind == yaml.ScalarNode {
		r.Contains, err = str(n, where)
		return err
	}
	return d.mapping(n, where, []string{"call", "tool", "contains", "equals", "status"}, func(key string, v *yaml.Node, at string) (err error) {
		var s string
		switch key {
		case "call":
			r.Call, err = str(v, at)
		case "tool":
			r.Tool, err = str(v, at)
		case "contains":
			r.Contains, err = str(v, at)
		case "equals":
			r.Equals, err = str(v, at)
		case "status":
			s, err = str(v, at)
			r.Status = llm.ResultStatus(s)
		}
		return err
	})
}

func (d *decoder) names(n *yaml.Node, where string) ([]string, error) {
	out := []string{} // non-nil: an empty list expects no tools
	err := d.sequence(n, where, func(i int, v *yaml.Node) error {
		s, err := str(v, fmt.Sprintf("%s[%d]", where, i))
		out = append(out, s)
		return err
	})
	return out, err
}

// mapping calls set for each field of the mapping n, rejecting unknown and
// repeated fields. set gets the field's value with aliases resolved and the
// field's name for messages.
func (d *decoder) mapping(n *yaml.Node, where string, known []string, set func(key string, v *yaml.Node, at string) error) error {
	n, err := d.resolve(n, where)
	if err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return errAt(n, where, "want a mapping, got %s", describe(n))
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return errAt(k, where, "want a field name, got %s", describe(k))
		}
		if !slices.Contains(known, k.Value) {
			return errAt(k, where, "unknown field at column %d%s (known: %s)", k.Column, suggest(k.Value, known), strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return errAt(k, where, "field %s given twice", k.Value) // a known name
		}
		seen[k.Value] = true
		v, err := d.resolve(n.Content[i+1], where)
		if err != nil {
			return err
		}
		if err := set(k.Value, v, where+": "+k.Value); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) sequence(n *yaml.Node, where string, each func(i int, v *yaml.Node) error) error {
	if n.Kind != yaml.SequenceNode {
		return errAt(n, where, "want a list, got %s", describe(n))
	}
	for i, v := range n.Content {
		v, err := d.resolve(v, where)
		if err != nil {
			return err
		}
		if err := each(i, v); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows aliases and counts the node against the budget.
func (d *decoder) resolve(n *yaml.Node, where string) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if d.budget--; d.budget < 0 {
		return nil, errAt(n, where, "the script expands to more than %d values (aliases?)", maxNodes)
	}
	return n, nil
}

// json writes the YAML value n as JSON, keeping the order of mapping keys,
// so arguments reach the tool in the order the script gives them.
func (d *decoder) json(b *bytes.Buffer, n *yaml.Node, where string, depth int) error {
	if depth > 100 {
		return errAt(n, where, "arguments nest more than 100 levels")
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := d.resolve(n.Content[i], where)
			if err != nil {
				return err
			}
			if k.Kind != yaml.ScalarNode {
				return errAt(k, where, "want an argument name, got %s", describe(k))
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k.Value)
			b.WriteByte(':')
			v, err := d.resolve(n.Content[i+1], where)
			if err != nil {
				return err
			}
			if err := d.json(b, v, where, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, v := range n.Content {
			v, err := d.resolve(v, where)
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if err := d.json(b, v, where, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return scalarJSON(b, n, where)
	default:
		return errAt(n, where, "unexpected %s", describe(n))
	}
	return nil
}

func scalarJSON(b *bytes.Buffer, n *yaml.Node, where string) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return errAt(n, where, "want true or false, got %s", describe(n))
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int", "!!float":
		// A number written as JSON writes it is kept as written.
		if isJSONNumber(n.Value) {
			b.WriteString(n.Value)
			return nil
		}
		var v float64
		if err := n.Decode(&v); err != nil {
			return errAt(n, where, "want a number, got %s", describe(n))
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return errAt(n, where, "an infinite number or NaN cannot be written in JSON")
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	default:
		// Strings, and scalars YAML would read as timestamps or binary,
		// which a tool receives as the text written.
		writeJSONString(b, n.Value)
	}
	return nil
}

func isJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// writeJSONString writes s as a JSON string without escaping <, > and &,
// which json.Marshal would turn into \u003c and the like in a shell command.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

func str(n *yaml.Node, where string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, where, "want a string, got %s", describe(n))
	}
	if n.ShortTag() == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

func integer(n *yaml.Node, where string) (int, error) {
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		return 0, errAt(n, where, "want an integer, got %s", describe(n))
	}
	return i, nil
}

func duration(n *yaml.Node, where string) (time.Duration, error) {
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!int" && n.Value == "0" {
			return 0, nil
		}
		if n.ShortTag() == "!!str" {
			if d, err := time.ParseDuration(n.Value); err == nil {
				return d, nil
			}
		}
	}
	return 0, errAt(n, where, "want a duration such as 50ms or 1.5s, got %s", describe(n))
}

func errAt(n *yaml.Node, where, format string, args ...any) error {
	return fmt.Errorf("line %d: %s: %s", n.Line, where, fmt.Sprintf(format, args...))
}

// describe says what kind of value n is, never what it holds: a script's
// errors must not quote the file (LoadScript).
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "true or false"
		}
		return "a string"
	}
	return "an unexpected YAML node"
}

// yamlProblem is the YAML parser's error without what it quotes of the
// script (an anchor's name, a value): the line and what was wrong stay.
func yamlProblem(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.IndexAny(msg, "'`\""); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + " …"
	}
	return fmt.Errorf("not valid YAML: %s", msg)
}

// readScript reads a script file: a regular file (not a device or a pipe,
// which could read for ever or block) of at most MaxScriptSize bytes.
func readScript(path string) ([]byte, error) {
	// Stat before opening: opening a named pipe blocks until a writer
	// comes.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("scripted: %s is not a regular file; give a script file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("scripted: %s is not a regular file; give a script file", path)
	}
	if fi.Size() > MaxScriptSize {
		return nil, fmt.Errorf("scripted: %s is %d bytes, more than a script may be (%d)", path, fi.Size(), MaxScriptSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	if len(data) > MaxScriptSize {
		return nil, fmt.Errorf("scripted: %s is more than %d bytes, more than a script may be", path, MaxScriptSize)
	}
	return data, nil
}

// suggest returns ` (did you mean "x"?)` for the known name closest to a
// misspelt one, or "".
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// jsonAsYAML prepares a JSON script for the YAML parser. JSON is nearly YAML;
// the differences are tabs, which YAML does not allow as indentation, and
// string escapes YAML lacks (\/, surrogate pairs), so strings with escapes
// are re-quoted. Line numbers are unchanged. A JSON syntax error is reported
// here with its line, which the YAML parser would describe less well.
func jsonAsYAML(data []byte) ([]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return data, nil
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		// The JSON error quotes the character it stopped at: not the
		// script's bytes, only where.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("line %d: invalid JSON (a syntax error at byte %d)", line, se.Offset)
		}
		return nil, errors.New("invalid JSON")
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '\t':
			out = append(out, ' ')
			i++
		case '"':
			end, escaped := jsonStringEnd(data, i)
			if !escaped {
				out = append(out, data[i:end]...)
			} else {
				var s string
				if err := json.Unmarshal(data[i:end], &s); err != nil {
					return nil, fmt.Errorf("invalid JSON string at byte %d", i)
				}
				out = strconv.AppendQuote(out, s)
			}
			i = end
		default:
			out = append(out, c)
			i++
		}
	}
	return out, nil
}

// jsonStringEnd returns the index just past the string starting at data[i]
// (a quote) in valid JSON, and whether the string holds an escape.
func jsonStringEnd(data []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(data), escaped
}
