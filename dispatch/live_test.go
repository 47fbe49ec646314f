package dispatch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/tool"
)

func TestRunningToolsOutputStreamsAsWholeRedactedLinesBeforeItsResult(t *testing.T) {
	f := &fake{spec: tool.Spec{Name: "exec"}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		fmt.Fprint(c.Partial, "building")
		fmt.Fprint(c.Partial, "…\nsecret=hunter2 ok\n")
		fmt.Fprint(c.Partial, "tail without newline")
		return tool.Output{Text: "done"}, nil
	}}
	rec := &recorder{}
	redact := func(s string) string { return strings.ReplaceAll(s, "hunter2", "[redacted]") }
	d := New(Config{Tools: tool.NewSet(f), Redact: redact, Events: rec})
	runRound(t, d, calls("exec", `{}`))

	var got []string
	resultAt, lastOutputAt := -1, -1
	rec.mu.Lock()
	for i, e := range rec.events {
		switch e.Type {
		case event.ToolOutput:
			got = append(got, e.Delta)
			lastOutputAt = i
			if e.CallID != "call_0" || e.Name != "exec" {
				t.Errorf("tool_output names %s/%s", e.CallID, e.Name)
			}
		case event.Result:
			resultAt = i
		}
	}
	rec.mu.Unlock()
	want := []string{"building…\nsecret=[redacted] ok\n", "tail without newline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_output deltas %q, want %q", got, want)
	}
	if lastOutputAt > resultAt {
		t.Errorf("tool_output at %d after the result at %d", lastOutputAt, resultAt)
	}
}

func TestLiveOutputIsBounded(t *testing.T) {
	f := &fake{spec: tool.Spec{Name: "exec"}, run: func(_ context.Context, c tool.Call) (tool.Output, error) {
		line := strings.Repeat("x", 99) + "\n"
		for range 2 * maxLive / len(line) {
			fmt.Fprint(c.Partial, line)
		}
		fmt.Fprint(c.Partial, strings.Repeat("y", 3*maxLiveLine)) // no newline at all
		return tool.Output{Text: "done"}, nil
	}}
	rec := &recorder{}
	d := New(Config{Tools: tool.NewSet(f), Events: rec})
	runRound(t, d, calls("exec", `{}`))
	total := 0
	outs := rec.of(event.ToolOutput)
	for _, e := range outs {
		total += len(e.Delta)
	}
	if total > maxLive+100 {
		t.Errorf("%d bytes of live output, want at most about %d", total, maxLive)
	}
	if last := outs[len(outs)-1].Delta; !strings.Contains(last, "more output") {
		t.Errorf("the last live output %q does not say the rest was cut", last)
	}
}
