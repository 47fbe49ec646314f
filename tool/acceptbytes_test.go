package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// plainSchema has every keyword the byte reader follows: typed fields,
// bounds, a string enum, a closed nested object and an array of them.
const plainSchema = `{
  "type": "object",
  "properties": {
    "path":  {"type": "string", "minLength": 1, "maxLength": 8},
    "limit": {"type": "integer", "minimum": -5, "maximum": 1000},
    "ratio": {"type": "number", "maximum": 2},
    "mode":  {"type": "string", "enum": ["text", "hex"]},
    "all":   {"type": "boolean"},
    "note":  {"type": "string"},
    "edits": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"$ref": "#/$defs/edit"}}
  },
  "$defs": {
    "edit": {
      "type": "object",
      "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
      "required": ["old"],
      "additionalProperties": false
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`

// TestAcceptGivesCheckVerdictAndMessage: for a schema the bytes are read
// against, every call is accepted or refused as Check does, with Check's
// message, whether the reader vouched for it or handed it on.
func TestAcceptGivesCheckVerdictAndMessage(t *testing.T) {
	closed := []string{
		``, `{}`, ` {"path":"a"} `, `{"path":"a","limit":7,"mode":"hex","all":true,"note":"x\n\u00e9"}`,
		`{"path":"héllo"}`, `{"path":"123456789"}`, `{"path":""}`, `{"path":"a\u0062"}`,
		`{"path":"a","limit":1001}`, `{"path":"a","limit":-6}`, `{"path":"a","limit":-5}`, `{"path":"a","limit":1.5}`,
		`{"path":"a","limit":1.0}`, `{"path":"a","limit":1e2}`, `{"path":"a","limit":01}`, `{"path":"a","limit":-}`,
		`{"path":"a","limit":1234567890123456}`, `{"path":"a","ratio":2}`, `{"path":"a","ratio":3}`, `{"path":"a","ratio":0.5}`,
		`{"path":"a","mode":"bin"}`, `{"path":"a","mode":"te\u0078t"}`, `{"path":"a","all":"true"}`, `{"path":"a","all":truex}`,
		`{"path":"a","extra":1}`, `{"path":"a","path":"b"}`, `{"path":"a","edits":[]}`, `{"path":"a","edits":[{"old":"x"}]}`,
		`{"path":"a","edits":[{"old":"x","new":"y"},{"old":""}]}`, `{"path":"a","edits":[{"old":"x"},{"old":"y"},{"old":"z"}]}`,
		`{"path":"a","edits":[{"new":"y"}]}`, `{"path":"a","edits":[{"old":"x","z":1}]}`, `{"path":"a","edits":[{"old":"x"},]}`,
		`{"path":"a",}`, `{"path":"a"} x`, `[]`, `null`, `{"path":null}`, `{"path":"a\x01"}`, `{"pa\u0074h":"a"}`,
		`{"path":"\xff\xfe"}`, `{"path":"a","note":"\q"}`, `{"path":"a","note":"\u12"}`, `{"path":"a"`, `{"path"`, `{`,
	}
	// askSchema's objects are open: other fields' values are read as JSON.
	open := []string{
		`{"questions":[{"prompt":"?"}]}`, `{"questions":[{"prompt":"?","x":1}],"y":{"z":[1.5,-0.25,true,false,null,"s\n"]}}`,
		`{"questions":[{"prompt":"?"}],"y":1e400}`, `{"questions":[{"prompt":"?"}],"y":1e2}`, `{"questions":[{"prompt":"?"}],"y":-}`,
		`{"questions":[{"prompt":"?"}],"y":1.}`, `{"questions":[{"prompt":"?"}],"y":01}`, `{"questions":[{"prompt":"?"}],"y":nul}`,
		`{"questions":[{"prompt":"?"}],"y":[1,]}`, `{"questions":[{"prompt":"?"}],"y":{"a":1,}}`, `{"questions":[{"prompt":"?"}],"y":{"\u0061":1}}`,
		`{"questions":[{"prompt":"?"}],"y":12345678901234567890}`, `{"questions":[{"prompt":""}],"y":1}`, `{"questions":[],"y":1}`,
		`{"questions":[{"prompt":"?"}],"y":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
		`{"questions":[{"prompt":"?"}],"y":` + strings.Repeat("[", 40) + strings.Repeat("]", 39) + `}`,
		`{"questions":[{"prompt":"?"}],"questions":[]}`, `{"y":1}`,
	}
	for _, tt := range []struct {
		schema string
		args   []string
		// vouched are read by the plan alone, decoding nothing.
		vouched []string
	}{
		{plainSchema, closed, []string{closed[3], `{"path":"a","edits":[{"old":"x","new":"y"}]}`}},
		{askSchema, open, open[:2]},
	} {
		v := mustValidator(t, tt.schema)
		if v.plan == nil {
			t.Fatalf("%s has no byte plan", tt.schema)
		}
		for _, args := range tt.vouched {
			if !v.plan.accepts([]byte(args)) {
				t.Errorf("%q: the plan did not vouch for it", args)
			}
		}
		for _, args := range tt.args {
			_, want := v.Check([]byte(args))
			got := v.Accept([]byte(args))
			if (got == nil) != (want == nil) {
				t.Errorf("%q: Accept %v, Check %v", args, got, want)
				continue
			}
			if got != nil && got.Error() != want.Error() {
				t.Errorf("%q: Accept says %q, Check %q", args, got, want)
			}
		}
	}
}

// TestPlainSchemasGetAPlan: the reader takes the schemas typed tools are
// given and the plain ones written by hand; it leaves to Check what it
// cannot read alone.
func TestPlainSchemasGetAPlan(t *testing.T) {
	typed := New("noop", "Do nothing.", func(context.Context, struct {
		N int      `json:"n"`
		S string   `json:"s,omitempty"`
		L []string `json:"l,omitempty"`
		B bool     `json:"b,omitempty"`
	}) (Output, error) {
		return Text("ok"), nil
	})
	for _, tt := range []struct {
		schema string
		plan   bool
	}{
		{string(typed.Spec().Schema), true},
		{plainSchema, true},
		{readSchema, true},
		{askSchema, true}, // open objects: an unknown field's value is read as JSON
		{`{"type":"object","properties":{"a":{"type":["string","null"]}},"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":["string","integer"]}},"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"enum":[1,2]}},"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"array"}},"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}},"additionalProperties":false}`, false},
		{`{"type":"object","required":["b"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"$ref":"#"}},"additionalProperties":false}`, false}, // recursive
		{`{"type":"array","items":{"type":"string"}}`, false},
	} {
		v, err := NewValidator(Spec{Name: "t", Schema: json.RawMessage(tt.schema)})
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		if got := v.plan != nil; got != tt.plan {
			t.Errorf("%s: plan %v, want %v", tt.schema, got, tt.plan)
		}
	}
}

// TestAcceptAllocatesNothingForAValidPlainCall: the point of reading the
// bytes is that a valid call decodes nothing.
func TestAcceptAllocatesNothingForAValidPlainCall(t *testing.T) {
	v := mustValidator(t, plainSchema)
	args := []byte(`{"path":"a.go","limit":200,"mode":"text","edits":[{"old":"x","new":"y\n"}]}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := v.Accept(args); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Accept allocated %v times for a valid plain call", n)
	}
}

// FuzzAccept holds Accept to Check: the same verdict and, when refused,
// the same message, for any schema and arguments.
func FuzzAccept(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{plainSchema, `{"path":"a","limit":7,"edits":[{"old":"x"}]}`},
		{plainSchema, `{"path":"","limit":1.5}`},
		{readSchema, `{"path":"a.go","mode":"hex"}`},
		{readSchema, `{"limit":"x","extra":1}`},
		{askSchema, `{"questions":[{"prompt":"?","x":{"y":[1.5,-0,true,null,"z"]}}],"more":{}}`},
		{askSchema, `{"questions":[{"prompt":"?"}],"big":1e400,"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer","minimum":0}}},"additionalProperties":false}`, `{"a":[1,-1]}`},
		{`{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":false}`, `{"a":false}`},
		{`{"type":"object","properties":{"a":{"type":["null","array"],"items":{"type":"string"}},"b":{"type":["string","null"],"enum":["x"]}},"additionalProperties":false}`, `{"a":null,"b":null}`},
	} {
		f.Add(s.schema, s.args)
	}
	// Random schemas seldom have a plan: the arguments are also held
	// against fixed ones that do.
	plain := []*Validator{mustValidator(f, plainSchema), mustValidator(f, readSchema), mustValidator(f, askSchema), mustValidator(f,
		`{"type":"object","properties":{"a":{"type":["null","array"],"items":{"type":"number","minimum":0}},"b":{"type":["string","null"],"enum":["x"]},"c":{"type":"boolean"}},"required":["c"],"additionalProperties":false}`)}
	f.Fuzz(func(t *testing.T, schema, args string) {
		for _, v := range plain {
			sameVerdict(t, v, args)
		}
		v, err := NewValidator(Spec{Name: "f", Schema: json.RawMessage(schema)})
		if err != nil {
			return
		}
		sameVerdict(t, v, args)
	})
}

// sameVerdict fails unless Accept gives args Check's verdict and message,
// and the plan, where there is one, vouches for nothing Check refuses.
func sameVerdict(t *testing.T, v *Validator, args string) {
	t.Helper()
	_, want := v.Check([]byte(args))
	got := v.Accept([]byte(args))
	switch {
	case (got == nil) != (want == nil):
		t.Fatalf("%q: Accept %v, Check %v", args, got, want)
	case got != nil && got.Error() != want.Error():
		t.Fatalf("%q: Accept says %q, Check %q", args, got, want)
	}
	if v.plan != nil && len(args) > 0 && v.plan.accepts([]byte(args)) && want != nil {
		t.Fatalf("%q: the plan vouched for arguments Check refuses: %v", args, want)
	}
}

func BenchmarkAcceptValid(b *testing.B) {
	v := mustValidator(b, readSchema)
	args := []byte(`{"path":"internal/x/y.go","limit":200}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Accept(args); err != nil {
			b.Fatal(err)
		}
	}
}
