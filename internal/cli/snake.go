package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode"
)

// The --json door spells fields in snake_case, the server camelCase
// (DESIGN §13): the same record carries the same fields on both doors. A
// thread or turn printed by a command is package protocol's view of it with
// each key in snake_case, made here so that the two doors cannot drift
// apart field by field.

// encodeSnake writes v as one JSON line: v's JSON (package protocol's
// spelling) with every object key in snake_case. Values are left as they
// are.
func encodeSnake(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	out, err := snakeKeys(b.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// snakeKeys rewrites the keys of the JSON objects in src to snake_case,
// keeping their order.
func snakeKeys(src []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var out bytes.Buffer
	str := json.NewEncoder(&out)
	str.SetEscapeHTML(false)
	// Each open object or array counts the tokens written into it: in an
	// object, even ones are keys.
	type open struct {
		object bool
		n      int
	}
	var stack []open
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		key := false
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			key = top.object && top.n%2 == 0
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			stack = append(stack, open{object: t == '{'})
		case string:
			if key {
				t = snake(t)
			}
			if err := str.Encode(t); err != nil {
				return nil, err
			}
			out.Truncate(out.Len() - 1) // Encode's newline
		case json.Number:
			out.WriteString(t.String())
		case bool:
			if t {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
}

// snake spells a camelCase key in snake_case: threadId → thread_id,
// cachedInputTokens → cached_input_tokens. A snake_case key stays as it is.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
