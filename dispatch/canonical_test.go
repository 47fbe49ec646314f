package dispatch

import (
	"strings"
	"testing"
)

// reencodedArgs is CanonicalArgs as it was before its fast path: every
// argument string decoded and encoded again.
func reencodedArgs(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || t == "{}" {
		return "{}"
	}
	return reencode(t)
}

var canonicalCases = []struct {
	args      string
	canonical bool // taken as it stands, without re-encoding
}{
	{`{"text":"t"}`, true},
	{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, true},
	{`{"a":-12,"b":0,"c":[],"d":{}}`, true},
	{`{"path":"src/main.go","limit":20}`, false}, // keys out of order
	{`{"a":1,"a":2}`, false},                     // a key twice: the last wins
	{`{"text": "t"}`, false},                     // a space
	{`{"a":1.0}`, false},                         // written 1
	{`{"a":1e2}`, false},                         // written 100
	{`{"a":-0}`, false},
	{`{"a":007}`, false}, // not JSON
	{`{"a":1234567890123456789}`, false},
	{`{"a":123456789012345}`, true},
	{`{"a":"x<y"}`, false}, // written \u003c
	{`{"a":"a&b"}`, false},
	{`{"a":"\n"}`, false},
	{`{"a":"\u0041"}`, false}, // written A
	{`{"a":"é"}`, false},
	{`{"a":"b"`, false}, // not JSON
	{`{"a":"b"}x`, false},
	{`{"a":truex}`, false},
	{`["b","a"]`, true},
	{`"s"`, true},
	{`42`, true},
	{`{"a":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}`, false}, // deeper than followed
	{`{"a":[[[1]]]}`, true},
	{`{}`, true},
	{``, false},
	{`not json`, false},
}

func TestCanonicalArgsIsWhatReencodingWrites(t *testing.T) {
	for _, c := range canonicalCases {
		if got := isCanonical(strings.TrimSpace(c.args)); got != c.canonical && c.args != "" && c.args != "{}" {
			t.Errorf("isCanonical(%s) = %v, want %v", c.args, got, c.canonical)
		}
		if got, want := CanonicalArgs(c.args), reencodedArgs(c.args); got != want {
			t.Errorf("CanonicalArgs(%s) = %s, re-encoding writes %s", c.args, got, want)
		}
	}
}

func TestCanonicalArgsOfCanonicalArgumentsDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { CanonicalArgs(`{"a":1,"b":{"c":"d"}}`) }); n != 0 {
		t.Fatalf("canonicalArgs of canonical arguments made %v allocations, want 0", n)
	}
}

func FuzzCanonicalArgs(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add(c.args)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := CanonicalArgs(s), reencodedArgs(s); got != want {
			t.Fatalf("CanonicalArgs(%q) = %q, re-encoding writes %q", s, got, want)
		}
	})
}
