package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStrictSchema(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{},"additionalProperties":false}}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"enum":[{"type":"object"}]}},"required":["a"],"additionalProperties":false}`, true},
		{`not json`, false},
	} {
		if got := StrictSchema(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("StrictSchema(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}

func TestOutputFromSchema(t *testing.T) {
	o, err := OutputFromSchema([]byte(`{"title":"The person","description":"Who","type":"object","properties":{"n":{"type":"string"}},"required":["n"],"additionalProperties":false}`), "file")
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "The_person" || o.Description != "Who" || !o.Strict {
		t.Errorf("output %+v, want The_person, Who, strict", o)
	}
	if o, err := OutputFromSchema([]byte(`{"type":"object"}`), "my schema.json"); err != nil || o.Name != "my_schema_json" || o.Strict {
		t.Errorf("untitled: %+v %v, want named after the file, not strict", o, err)
	}
	for _, bad := range []string{`[1]`, `{"type":"array"}`, `{`} {
		if _, err := OutputFromSchema([]byte(bad), "x"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if n := OutputName(strings.Repeat("é", 3)); n != "answer" {
		t.Errorf("OutputName of nothing usable = %q, want answer", n)
	}
}
