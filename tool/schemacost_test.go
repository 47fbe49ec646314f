package tool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkWithin runs fn and fails the test if it has not returned in d: a
// check the bounds miss never returns, and the test must still end.
func checkWithin(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
	}
}

// TestSchemasThatMultiplyTheirChecksAreRefused: references repeated in
// allOf (forty definitions, each naming the next twice) applied 2^40
// schemas to one string, and the check never returned.
func TestSchemasThatMultiplyTheirChecksAreRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/a0"}},"$defs":{`)
	for i := range 40 {
		fmt.Fprintf(&b, `"a%d":{"allOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	b.WriteString(`"a40":{"type":"string","minLength":3}}}`)
	checkWithin(t, 10*time.Second, func() {
		v, err := NewValidator(Spec{Name: "x", Schema: []byte(b.String())})
		if err == nil {
			_, err = v.Check([]byte(`{"x":"abc"}`))
			t.Errorf("the schema compiled (check: %v); want it refused", err)
			return
		}
		if !strings.Contains(err.Error(), "refer to each definition once") {
			t.Errorf("error %q does not say what to change", err)
		}
	})
}

// TestValuesThatMultiplyTheirChecksAreRefused: a schema whose definitions
// apply each other twice per level of the value is small and compiles;
// a value forty levels deep made its check apply 2^40 schemas.
func TestValuesThatMultiplyTheirChecksAreRefused(t *testing.T) {
	s := `{"type":"object","$defs":{"n":{"allOf":[{"$ref":"#/$defs/m"},{"$ref":"#/$defs/m"}]},` +
		`"m":{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}},"properties":{"x":{"$ref":"#/$defs/n"}}}`
	v, err := NewValidator(Spec{Name: "x", Schema: []byte(s)})
	if err != nil {
		t.Fatal(err)
	}
	// A shallow value is checked as before.
	if _, err := v.Check([]byte(`{"x":{"x":{}}}`)); err != nil {
		t.Fatalf("a shallow value: %v", err)
	}
	if _, err := v.Check([]byte(`{"x":{"x":1}}`)); err == nil {
		t.Fatal("a wrong shallow value was accepted")
	}
	deep := strings.Repeat(`{"x":`, 40) + `{}` + strings.Repeat(`}`, 40)
	checkWithin(t, 10*time.Second, func() {
		_, err := v.Check([]byte(deep))
		if err == nil || !strings.Contains(err.Error(), "schema checks") {
			t.Errorf("a value forty levels deep: %v, want refused as too many checks", err)
		}
	})
}

// TestDeeplyNestedSchemasAreRefused: the library decodes a schema in
// time quadratic in its nesting (6,000 levels took 13 s to compile).
func TestDeeplyNestedSchemasAreRefused(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{100, true}, {maxSchemaDepth + 1, false}, {6000, false}} {
		inner := strings.Repeat(`{"items":`, tc.depth) + `{"type":"string"}` + strings.Repeat(`}`, tc.depth)
		s := `{"type":"object","properties":{"x":` + inner + `}}`
		start := time.Now()
		_, err := NewValidator(Spec{Name: "x", Schema: []byte(s)})
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("depth %d: compiling took %v", tc.depth, took)
		}
		if (err == nil) != tc.ok {
			t.Errorf("depth %d: err %v, want ok=%v", tc.depth, err, tc.ok)
		}
	}
}

func TestJSONDepthSkipsStrings(t *testing.T) {
	for raw, want := range map[string]int{
		`{}`: 1, `{"a":[{}]}`: 3, `{"a":"[[[{{{"}`: 1, `{"a":"\"[[["}`: 1, `[`: 1, `"x"`: 0,
	} {
		if got := jsonDepth([]byte(raw)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", raw, got, want)
		}
	}
}

// TestLongPatternsAreBounded: matching costs the pattern's program times
// the text. A 54 KB pattern (18,008 instructions) took 4.5 s to match 10
// KB; it is refused at compile. A pattern within the bound (2,000
// instructions, all live at every character) matched against a megabyte
// took minutes; that value is refused before the match, while a short
// pattern still checks the same megabyte.
func TestLongPatternsAreBounded(t *testing.T) {
	schema := func(pattern string) []byte {
		b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "pattern": pattern}}})
		return b
	}
	if _, err := NewValidator(Spec{Name: "x", Schema: schema("^(" + strings.Repeat("[a-z]?", 3000) + ")*$")}); err == nil || !strings.Contains(err.Error(), "instructions") {
		t.Errorf("a pattern of 18,008 instructions: %v, want refused", err)
	}
	long, err := NewValidator(Spec{Name: "x", Schema: schema(`^((?:[a-z]?){1000})*$`)})
	if err != nil {
		t.Fatalf("a pattern of the longest repetition: %v", err)
	}
	short, err := NewValidator(Spec{Name: "x", Schema: schema(`^[a-z]+$`)})
	if err != nil {
		t.Fatal(err)
	}
	mega, _ := json.Marshal(map[string]any{"x": strings.Repeat("ab", 1<<19) + "!"})
	checkWithin(t, 10*time.Second, func() {
		if _, err := long.Check(mega); err == nil || !strings.Contains(err.Error(), "schema checks") {
			t.Errorf("a megabyte against the long pattern: %v, want refused as too many checks", err)
		}
	})
	okVal, _ := json.Marshal(map[string]any{"x": strings.Repeat("ab", 1<<19)})
	if _, err := short.Check(okVal); err != nil {
		t.Errorf("a megabyte against a short pattern: %v", err)
	}
}
