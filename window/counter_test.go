package window

import (
	"strings"
	"testing"
)

func TestCounterForPicksTheEncodingByModelFamily(t *testing.T) {
	tests := []struct {
		model     string
		wantEnc   string
		wantExact bool
	}{
		{"gpt-5-mini", O200k, true},
		{"gpt-4o-2024-08-06", O200k, true},
		{"openai/gpt-4.1", O200k, true},
		{"o4-mini", O200k, true},
		{"gpt-4-turbo", Cl100k, true},
		{"gpt-3.5-turbo", Cl100k, true},
		{"claude-sonnet-4-5", Cl100k, false},
		{"deepseek-chat", Cl100k, false},
		{"", Cl100k, false},
		// A name that merely starts like a family is not taken for it.
		{"o3x-custom", Cl100k, false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			c, exact := CounterFor(tt.model)
			if c.Name() != tt.wantEnc || exact != tt.wantExact {
				t.Errorf("CounterFor(%q) = %s exact %v, want %s exact %v", tt.model, c.Name(), exact, tt.wantEnc, tt.wantExact)
			}
		})
	}
}

func TestEncodingsCountTokensOffline(t *testing.T) {
	tests := []struct {
		enc  string
		text string
		want int
	}{
		{O200k, "hello world", 2},
		{Cl100k, "hello world", 2},
		{O200k, "", 0},
		{Heuristic, "abcdefgh", 2},
		{Heuristic, "abcdefghi", 3},
	}
	for _, tt := range tests {
		if got := Encoding(tt.enc).Count(tt.text); got != tt.want {
			t.Errorf("%s.Count(%q) = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
	// A long text is counted, not guessed: about a token per word here.
	words := strings.Repeat(" word", 1000)
	if got := Encoding(O200k).Count(words); got < 990 || got > 1010 {
		t.Errorf("o200k counted %d tokens for 1,000 words", got)
	}
}

func TestCostsCacheTextsAndCountTheSame(t *testing.T) {
	k := newCosts(Encoding(O200k))
	long := strings.Repeat("a fairly ordinary sentence. ", 50)
	first := k.text(long)
	if len(k.cur) != 1 {
		t.Fatalf("the text was not cached: %d entries", len(k.cur))
	}
	if again := k.text(long); again != first || len(k.cur) != 1 {
		t.Errorf("cached count %d, counted %d; %d entries", again, first, len(k.cur))
	}
	if k.text("") != 0 || len(k.cur) != 1 {
		t.Errorf("the empty text was counted or cached")
	}
}

func TestCostsCacheKeepsTwoGenerations(t *testing.T) {
	k := newCosts(Encoding(Heuristic))
	for i := range cacheMax + 10 {
		k.put(uint64(i), 1)
	}
	if len(k.cur) != 10 || len(k.old) != cacheMax {
		t.Errorf("generations hold %d and %d entries, want 10 and %d", len(k.cur), len(k.old), cacheMax)
	}
}
