package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

const readSchema = `{
  "type": "object",
  "properties": {
    "path":  {"type": "string", "minLength": 1, "description": "file path relative to the workspace"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
    "mode":  {"type": "string", "enum": ["text", "hex"]},
    "note":  {"type": "string"}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const askSchema = `{
  "type": "object",
  "$defs": {
    "question": {
      "type": "object",
      "properties": {
        "prompt": {"type": "string", "minLength": 1, "description": "the question"},
        "options": {"type": "array", "items": {"type": "string"}, "maxItems": 8}
      },
      "required": ["prompt"]
    }
  },
  "properties": {
    "questions": {"type": "array", "items": {"$ref": "#/$defs/question"}, "minItems": 1, "maxItems": 4}
  },
  "required": ["questions"]
}`

func mustValidator(t testing.TB, schema string) *Validator {
	t.Helper()
	v, err := NewValidator(Spec{Name: "read_file", Schema: json.RawMessage(schema)})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

func TestCheckAcceptsValidArguments(t *testing.T) {
	tests := []struct {
		name, schema, args string
	}{
		{"required only", readSchema, `{"path":"a.go"}`},
		{"every field", readSchema, `{"path":"a.go","limit":10,"mode":"hex","note":""}`},
		{"empty optional string", readSchema, `{"path":"x","note":""}`},
		{"surrounding whitespace", readSchema, " \n{\"path\":\"a\"}\t"},
		{"nil schema takes any object", "", `{"anything":[1,2,{"x":null}]}`},
		{"nil schema takes empty args", "", ``},
		{"null schema takes whitespace", "null", "   "},
		{"nested through $ref", askSchema, `{"questions":[{"prompt":"why?","options":["a","b"]}]}`},
		{"unsupported draft is read as 2020-12", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustValidator(t, tt.schema)
			obj, err := v.Check([]byte(tt.args))
			if err != nil {
				t.Fatalf("Check(%s) = %v, want no error", tt.args, err)
			}
			if obj == nil {
				t.Fatal("Check returned a nil object for valid arguments")
			}
		})
	}
}

func TestCheckNamesEveryProblem(t *testing.T) {
	type want struct {
		kind  ProblemKind
		field string
		text  string // a part of the message
	}
	tests := []struct {
		name, schema, args string
		want               []want
	}{
		{"not JSON", readSchema, `{"path": "a.go"`, []want{
			{ProblemSyntax, "", "arguments are not valid JSON"},
			{ProblemSyntax, "", "send one JSON object with the fields: limit (integer), mode (one of \"text\", \"hex\"), note (string), path (string, required)"},
		}},
		{"trailing garbage", readSchema, `{"path":"a"} {}`, []want{{ProblemSyntax, "", "not valid JSON"}}},
		{"an array", readSchema, `["a.go"]`, []want{{ProblemNotObject, "", "must be a JSON object, got an array"}}},
		{"a string", readSchema, `"a.go"`, []want{{ProblemNotObject, "", `got a string ("a.go")`}}},
		{"missing key", readSchema, `{}`, []want{
			{ProblemMissing, "path", `missing required field "path" (string): file path relative to the workspace`},
		}},
		{"empty value", readSchema, `{"path":""}`, []want{
			{ProblemEmpty, "path", `field "path" is an empty string; it needs a non-empty value: file path relative to the workspace`},
		}},
		{"null value", readSchema, `{"path":null}`, []want{{ProblemNull, "path", `field "path" is null; it needs a string`}}},
		{"wrong type", readSchema, `{"path":"a","limit":"10"}`, []want{
			{ProblemType, "limit", `field "limit" must be an integer, got a string ("10")`},
		}},
		{"fraction for integer", readSchema, `{"path":"a","limit":1.5}`, []want{{ProblemType, "limit", "must be an integer, got a number (1.5)"}}},
		{"out of range", readSchema, `{"path":"a","limit":0}`, []want{{ProblemInvalid, "limit", "below the minimum 1"}}},
		{"not in enum", readSchema, `{"path":"a","mode":"bin"}`, []want{{ProblemInvalid, "mode", `must be one of "text", "hex", got a string ("bin")`}}},
		{"unknown field", readSchema, `{"path":"a","paht":"b"}`, []want{
			{ProblemUnknown, "paht", `unknown field "paht"; the fields allowed here are: limit, mode, note, path`},
		}},
		{"several problems at once", readSchema, `{"limit":"x","extra":1}`, []want{
			{ProblemMissing, "path", "missing required field"},
			{ProblemType, "limit", "must be an integer"},
			{ProblemUnknown, "extra", "unknown field"},
		}},
		{"nested empty through $ref", askSchema, `{"questions":[{"prompt":"ok"},{"prompt":""}]}`, []want{
			{ProblemEmpty, "questions[1].prompt", `field "questions[1].prompt" is an empty string`},
		}},
		{"nested missing through $ref", askSchema, `{"questions":[{"options":[]}]}`, []want{
			{ProblemMissing, "questions[0].prompt", `missing required field "questions[0].prompt" (string): the question`},
		}},
		{"too many items", askSchema, `{"questions":[{"prompt":"a"},{"prompt":"b"},{"prompt":"c"},{"prompt":"d"},{"prompt":"e"}]}`, []want{
			{ProblemInvalid, "questions", "has 5 items, at most 4 allowed"},
		}},
		{"what the walk cannot explain comes from the library", `{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`, `{"a":"y"}`, []want{
			{ProblemInvalid, "", "do not match the schema"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustValidator(t, tt.schema)
			_, err := v.Check([]byte(tt.args))
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("Check(%s) = %v, want *ArgsError", tt.args, err)
			}
			if len(ae.Problems) != len(tt.want) && tt.name != "not JSON" {
				t.Errorf("got %d problems, want %d:\n%s", len(ae.Problems), len(tt.want), err)
			}
			for _, w := range tt.want {
				if !ae.Has(w.kind, w.field) {
					t.Errorf("no %s problem for field %q in:\n%s", w.kind, w.field, err)
				}
				if !strings.Contains(err.Error(), w.text) {
					t.Errorf("message lacks %q:\n%s", w.text, err)
				}
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "invalid arguments for read_file") {
				t.Errorf("message does not name the tool:\n%s", msg)
			}
			if !strings.HasSuffix(msg, "An identical call will be refused again: fix the arguments above and call read_file again.") {
				t.Errorf("message does not say an identical call is refused again:\n%s", msg)
			}
		})
	}
}

func TestCheckTellsMissingFromEmpty(t *testing.T) {
	v := mustValidator(t, readSchema)
	_, missing := v.Check([]byte(`{}`))
	_, empty := v.Check([]byte(`{"path":""}`))
	if missing == nil || empty == nil {
		t.Fatalf("want both refused, got %v and %v", missing, empty)
	}
	if missing.Error() == empty.Error() {
		t.Fatalf("missing key and empty value give the same message:\n%s", missing)
	}
	if !strings.Contains(missing.Error(), "missing") || strings.Contains(empty.Error(), "missing") {
		t.Errorf("only the absent key may be called missing:\nmissing: %s\nempty: %s", missing, empty)
	}
}

func TestNewValidatorRefusesBrokenSchemas(t *testing.T) {
	for _, s := range []string{`{"type":`, `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`, `[1]`} {
		if _, err := NewValidator(Spec{Name: "t", Schema: json.RawMessage(s)}); err == nil {
			t.Errorf("NewValidator(%s) succeeded, want an error", s)
		}
	}
}

// FuzzCheck: Check never panics, accepts exactly what the compiled schema
// accepts, and explains every refusal with at least one problem.
func FuzzCheck(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{readSchema, `{"path":"a.go"}`},
		{readSchema, `{"path":""}`},
		{readSchema, `{"limit":"x","extra":1}`},
		{askSchema, `{"questions":[{"prompt":"?"}]}`},
		{askSchema, `{"questions":[{}]}`},
		{`{"type":"object","properties":{"a":{"type":["string","null"]}}}`, `{"a":null}`},
		{``, `[]`},
		{`{"$ref":"#"}`, `{"a":{"b":{}}}`},
	} {
		f.Add(s.schema, s.args)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		v, err := NewValidator(Spec{Name: "f", Schema: json.RawMessage(schema)})
		if err != nil {
			return
		}
		obj, err := v.Check([]byte(args))
		want := judge(v.resolved, args)
		switch {
		case want == nil && err != nil:
			t.Fatalf("schema accepts %q but Check refused it: %v", args, err)
		case want != nil && err == nil:
			t.Fatalf("schema refuses %q (%v) but Check accepted it", args, want)
		case err != nil:
			var ae *ArgsError
			if !errors.As(err, &ae) || len(ae.Problems) == 0 {
				t.Fatalf("refusal without problems: %v", err)
			}
		case obj == nil:
			t.Fatal("accepted without an object")
		}
	})
}

// judge is the reference: decode as Check documents, then ask the library.
func judge(rs *jsonschema.Resolved, args string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("library panicked")
		}
	}()
	s := strings.TrimSpace(args)
	if s == "" {
		s = "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	return rs.Validate(m)
}

func BenchmarkCheckValid(b *testing.B) {
	v := mustValidator(b, readSchema)
	args := []byte(`{"path":"internal/x/y.go","limit":200}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Check(args); err != nil {
			b.Fatal(err)
		}
	}
}

// The empty-arguments fast path gives the verdict the full check gives.
func TestEmptyArgumentsVerdictMatchesTheFullCheck(t *testing.T) {
	for _, tt := range []struct {
		schema string
		ok     bool
	}{
		{`{"type":"object","properties":{"path":{"type":"string"}}}`, true},
		{`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, false},
		{`{"type":"object","minProperties":1}`, false},
		{`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`, false},
		{``, true},
	} {
		v, err := NewValidator(Spec{Name: "t", Schema: []byte(tt.schema)})
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range []string{"{}", " { } ", ""} {
			_, err := v.Check([]byte(args))
			if (err == nil) != tt.ok {
				t.Errorf("schema %s, args %q: err %v, want ok=%v", tt.schema, args, err, tt.ok)
			}
		}
	}
}

// A valid call's field names are never formatted: the label of a field is
// built only for a problem's message (the dispatcher checks every call).
func TestValidatorValidCallFormatsNoLabel(t *testing.T) {
	typed := New("noop", "Do nothing.", func(context.Context, struct {
		N int    `json:"n"`
		S string `json:"s,omitempty"`
	}) (Output, error) {
		return Text("ok"), nil
	})
	v, err := NewValidator(typed.Spec())
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"n":1,"s":"x"}`)
	var val any
	base := testing.AllocsPerRun(100, func() { _ = json.Unmarshal(args, &val) })
	got := testing.AllocsPerRun(100, func() {
		if _, err := v.Check(args); err != nil {
			t.Fatal(err)
		}
	})
	// Decoding is the same work as json.Unmarshal into an any; the walk
	// adds the sorted key list alone.
	if got > base+1 {
		t.Fatalf("Check allocates %v times for a valid call, decoding alone %v; a valid call must format no field label", got, base)
	}
}

// TestClosedObjectsAreToldApartOncePerSchema: whether an object schema
// allows other fields is remembered per schema of the validator, so a
// closed object and an open one nested in it keep their own verdicts call
// after call.
func TestClosedObjectsAreToldApartOncePerSchema(t *testing.T) {
	v := mustValidator(t, `{
  "type": "object",
  "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}},
  "additionalProperties": false
}`)
	for range 3 {
		if _, err := v.Check([]byte(`{"inner":{"a":"x","extra":1}}`)); err != nil {
			t.Fatalf("an open nested object refused a field of its own: %v", err)
		}
		_, err := v.Check([]byte(`{"inner":{},"extra":1}`))
		var ae *ArgsError
		if !errors.As(err, &ae) || !ae.Has(ProblemUnknown, "extra") {
			t.Fatalf("the closed object took an unknown field: %v", err)
		}
	}
}
