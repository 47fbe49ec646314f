package textcall

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/think"

	"github.com/reinhq/rein/llm/internal/jsontext"
)

func addSeeds(f *testing.F, add func(in string, inside bool)) {
	for _, tt := range parseTests {
		add(tt.in, tt.think.StartInside)
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f, func(in string, _ bool) { f.Add(in) })
	f.Fuzz(func(t *testing.T, in string) {
		visible, calls := Parse(in, Options{Catalog: testCatalog})
		if visible != strings.TrimSpace(visible) {
			t.Fatalf("visible %q is not trimmed", visible)
		}
		if utf8.ValidString(in) && !utf8.ValidString(visible) {
			t.Fatalf("visible %q is not valid UTF-8", visible)
		}
		if len(visible) > len(in) {
			t.Fatalf("visible %q is longer than the input", visible)
		}
		for _, c := range calls {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(c.Args), &obj); err != nil {
				t.Fatalf("args %q of %q are not a JSON object: %v", c.Args, c.Name, err)
			}
			if c.Name == "" || c.Name != strings.TrimSpace(c.Name) {
				t.Fatalf("bad call name %q", c.Name)
			}
		}
	})
}

func FuzzFilter(f *testing.F) {
	addSeeds(f, func(in string, inside bool) { f.Add(in, uint64(0x9e3779b97f4a7c15), inside) })
	f.Fuzz(func(t *testing.T, in string, cuts uint64, inside bool) {
		o := Options{Catalog: testCatalog, Think: think.Options{StartInside: inside}}
		wantText, wantCalls := Parse(in, o)
		// Cut the input where the bits of cuts say, cycling over them.
		var chunks []string
		start := 0
		for i := 1; i < len(in); i++ {
			if cuts>>(uint(i)%64)&1 == 1 {
				chunks = append(chunks, in[start:i])
				start = i
			}
		}
		chunks = append(chunks, in[start:])
		text, calls := stream(t, o, chunks)
		if text != wantText || !sameCalls(calls, wantCalls) {
			t.Fatalf("chunks %q:\nstream %q %+v\nparse  %q %+v", chunks, text, calls, wantText, wantCalls)
		}
	})
}

// sameJSON reports whether two JSON texts hold the same value; escapes such
// as \ufffd and the character itself are the same.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

var simpleName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func FuzzFormatRoundTrip(f *testing.F) {
	f.Add("write_file", "content", "line one\n  <b>bold</b> a < b\n")
	f.Add("x", "v", "")
	f.Fuzz(func(t *testing.T, name, key, value string) {
		low := strings.ToLower(value)
		if !simpleName.MatchString(name) || !simpleName.MatchString(key) ||
			strings.Contains(low, "dsml") || strings.Contains(low, "think") {
			t.Skip("a name needing escapes, or a value holding markup, cannot round-trip")
		}
		if len(name) > maxTagLen/2 || len(key) > maxTagLen/2 {
			// A tag longer than maxTagLen is not markup (the filter holds
			// back no more than that); real tool and parameter names are
			// identifiers far shorter than half of it.
			t.Skip("a name too long for a tag cannot round-trip")
		}
		args := string(appendValue(append(jsontext.AppendString([]byte("{"), key), ':'), 0, true, value)) + "}"
		_, calls := Parse(Format([]llm.Call{{Name: name, Args: args}}), Options{})
		if len(calls) != 1 || calls[0].Name != name || !sameJSON(calls[0].Args, args) {
			t.Fatalf("round trip of %s %s gave %+v", name, args, calls)
		}
	})
}

// FuzzAppendString checks the argument string encoder against encoding/json
// with HTML escaping off.
