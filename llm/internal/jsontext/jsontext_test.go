package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a < b && c > d", "quote \" backslash \\ nl \n tab \t nul \x00 del \x7f", "bad \xff\xe6\x97 utf8", "line sep \u2028 \u2029", "日本語 ‖｜"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(AppendString(nil, s)); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
