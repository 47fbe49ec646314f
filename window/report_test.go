package window

import (
	"testing"

	"github.com/reinhq/rein/event"
)

func sum(r *event.ContextReport) int {
	n := 0
	for _, s := range r.Segments {
		n += s.Tokens
	}
	return n
}

func TestReportSegmentsAddUpToTheTotal(t *testing.T) {
	w, err := New(Config{Model: "gpt-5", Window: 10_000, MaxOutput: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	counted := [numSegments]int{System: 300, Instructions: 120, Memory: 40, Tools: 900, History: 2_000, ToolResults: 3_333}
	tests := []struct {
		name   string
		input  int
		source string
	}{
		{"estimate", 6_693 + 0, sourceEstimate},
		{"provider says more", 7_001, sourceProvider},
		{"provider says less", 5_999, sourceProvider},
		{"over the window", 12_345, sourceProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := w.report(counted, tt.input, 1_000, tt.source)
			if got := sum(r); got != r.Total {
				t.Errorf("segments add up to %d, total %d", got, r.Total)
			}
			if r.Input != tt.input || r.Used != tt.input+1_000 || r.Source != tt.source {
				t.Errorf("input %d used %d source %s", r.Input, r.Used, r.Source)
			}
			in := 0
			for _, s := range r.Segments[:inputSegments] {
				in += s.Tokens
			}
			if in != tt.input {
				t.Errorf("input segments add up to %d, input %d", in, tt.input)
			}
			if r.Total != max(10_000, r.Used) || r.Free != max(0, 10_000-r.Used) {
				t.Errorf("total %d free %d for used %d", r.Total, r.Free, r.Used)
			}
			if len(r.Segments) != int(numSegments) || r.Segments[ToolResults].Name != "tool_results" {
				t.Errorf("segments %v", r.Segments)
			}
		})
	}
}

func TestReportIsEstimatedUnlessCountedByTheModelsOwnTokenizer(t *testing.T) {
	tests := []struct {
		name      string
		c         Config
		source    string
		estimated bool
	}{
		{"openai model, own tokenizer", Config{Model: "gpt-5", Window: 1000}, sourceEstimate, false},
		{"anthropic model, borrowed tokenizer", Config{Model: "claude-sonnet-4-5", Window: 1000}, sourceEstimate, true},
		{"anthropic model, provider count", Config{Model: "claude-sonnet-4-5", Window: 1000}, sourceProvider, false},
		{"guessed window", Config{Model: "gpt-5", Window: 1000, WindowEstimated: true}, sourceProvider, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if r := w.report([numSegments]int{History: 10}, 10, 10, tt.source); r.Estimated != tt.estimated {
				t.Errorf("estimated = %v, want %v", r.Estimated, tt.estimated)
			}
		})
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	for _, c := range []Config{{}, {Window: -1}, {Window: 100, Threshold: 1.5}, {Window: 100, Threshold: -0.1}, {Window: 100, MaxOutput: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}
