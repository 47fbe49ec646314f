package window

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// numbered returns n lines "line 0001 …".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %04d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()
}

func TestCutMiddleKeepsHeadAndTailAtLineEnds(t *testing.T) {
	s := numbered(1000)
	c := Encoding(O200k)
	tokens := c.Count(s)
	got := cutMiddle(s, tokens, 500, func(cut, lines int) string {
		return fmt.Sprintf("\n[cut %d tokens, %d lines]\n", cut, lines)
	})
	if !strings.HasPrefix(got, "line 0001:") || !strings.HasSuffix(got, "line 1000: the quick brown fox jumps over the lazy dog\n") {
		t.Errorf("head or tail lost:\n%.200s … %s", got, got[len(got)-100:])
	}
	if !strings.Contains(got, "[cut ") {
		t.Fatal("no marker")
	}
	if n := c.Count(got); n < 400 || n > 600 {
		t.Errorf("kept %d tokens, want about 500", n)
	}
	// Cuts fall at line ends: every kept line is whole.
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if line != "" && !strings.HasPrefix(line, "line ") && !strings.HasPrefix(line, "[cut ") {
			t.Errorf("a line was cut in the middle: %q", line)
		}
	}
}

func TestCutMiddleLeavesShortTextAlone(t *testing.T) {
	s := numbered(3)
	if got := cutMiddle(s, 30, 500, func(int, int) string { return "X" }); got != s {
		t.Errorf("changed a text that fits: %q", got)
	}
}

func TestCutMiddleKeepsRunesWhole(t *testing.T) {
	s := strings.Repeat("日本語のテキスト", 2000) // no newlines
	got := cutMiddle(s, 20000, 300, func(int, int) string { return "[cut]" })
	if !utf8.ValidString(got) {
		t.Error("a rune was split")
	}
	if !strings.Contains(got, "[cut]") {
		t.Error("no marker")
	}
}

func TestCapShortensLongResultsAtRecordTime(t *testing.T) {
	w, err := New(Config{Model: "gpt-5", Window: 400_000, ResultCap: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string
		cut     bool
	}{
		{"short result", "ok", false},
		{"just under the cap", numbered(60), false},
		{"long result", numbered(2_000), true},
		{"very long result (sampled)", numbered(20_000), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := llm.Result{CallID: "c1", Name: "grep", Content: tt.content, Status: llm.ResultOK}
			res = w.Cap(res)
			if cut := res.Content != tt.content; cut != tt.cut {
				t.Fatalf("cut = %v, want %v", cut, tt.cut)
			}
			if !tt.cut {
				return
			}
			if !strings.Contains(res.Content, "were cut from the middle of this output") || !strings.Contains(res.Content, "Call grep again") {
				t.Errorf("marker missing or does not say how to see the rest:\n%s", res.Content[len(res.Content)/2-300:len(res.Content)/2+300])
			}
			if n := w.Count(res.Content); n > 1_200 {
				t.Errorf("kept %d tokens, cap 1,000", n)
			}
			if !strings.HasPrefix(res.Content, "line 0001:") || res.CallID != "c1" || res.Status != llm.ResultOK {
				t.Errorf("the head or the result's identity changed: %+v", res)
			}
		})
	}
}

func TestCapDisabled(t *testing.T) {
	w, err := New(Config{Window: 1000, ResultCap: -1})
	if err != nil {
		t.Fatal(err)
	}
	res := llm.Result{Content: numbered(5000)}
	res = w.Cap(res)
	if res.Content != numbered(5000) {
		t.Error("a negative cap still cut")
	}
}
