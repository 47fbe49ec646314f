package window_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/window"
)

// wordsTool answers with about n tokens: {"n": N} words, numbered by line.
type wordsTool struct{ name string }

func (w wordsTool) Spec() tool.Spec {
	return tool.Spec{Name: w.name, Description: "returns n words", Access: tool.ReadOnly}
}

func (w wordsTool) Run(_ context.Context, c tool.Call) (tool.Output, error) {
	var in struct{ N int }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return tool.Output{}, err
	}
	return tool.Output{Text: words(in.N)}, nil
}

// words returns about n tokens of text in lines of ten words.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i%10 == 0 && i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(" word")
	}
	return b.String()
}

// journal records what the engine journals.
type journal struct {
	mu    sync.Mutex
	items []llm.Item
}

func (j *journal) Record(_ context.Context, _ string, it llm.Item) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.items = append(j.items, it)
	return nil
}

// events collects a turn's events.
type events struct {
	mu  sync.Mutex
	all []event.Event
}

func (e *events) Handle(ev event.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(t event.Type) []event.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []event.Event
	for _, ev := range e.all {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

func (e *events) warnings(code string) []string {
	var out []string
	for _, ev := range e.of(event.Warning) {
		if ev.Code == code {
			out = append(out, ev.Content)
		}
	}
	return out
}

type setup struct {
	window  window.Config
	opts    loop.Options
	history []llm.Item
	prompt  string
}

// run runs one turn with the scripted model (every request checked against
// the history invariants) and returns what happened.
func run(t *testing.T, s scripted.Script, su setup) (*loop.Outcome, *scripted.Model, *events, *journal, error) {
	t.Helper()
	w, err := window.New(su.window)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s, scripted.RecordRequests())
	ev, j := &events{}, &journal{}
	o := su.opts
	o.Model, o.Window, o.Events, o.Journal = m, w, ev, j
	if o.Tools == nil {
		o.Tools = tool.NewSet(wordsTool{"words"})
	}
	e, err := loop.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prompt := su.prompt
	if prompt == "" {
		prompt = "Count the words in the corpus, file by file."
	}
	out, err := e.Run(ctx, loop.Turn{ThreadID: "th", History: su.history, Input: []llm.Item{llm.UserText(prompt)}})
	if out == nil {
		t.Fatalf("no outcome: %v", err)
	}
	for i, req := range m.Requests() {
		if err := llm.CheckHistory(req.Items); err != nil {
			t.Errorf("request %d breaks the history invariants: %v", i+1, err)
		}
	}
	return out, m, ev, j, err
}

func wordsCall(n int) scripted.Call {
	return scripted.Call{Name: "words", Args: map[string]any{"n": n}}
}

// results returns the results of a request, in order.
func results(req llm.Request) []*llm.Result {
	var out []*llm.Result
	for i := range req.Items {
		if r := req.Items[i].Result(); req.Items[i].Role == llm.RoleTool && r != nil {
			out = append(out, r)
		}
	}
	return out
}

const shortMarker = "were cut from the middle of this earlier result"

func TestGuardShortensTheLargestOldResultsFirst(t *testing.T) {
	// Window 10,000 tokens, 1,000 kept for the answer: the guard acts past
	// 9,000. Six rounds bring results of 1,200, 1,200, 2,000, 1,200,
	// 1,200 and 1,200 words; before the seventh request the history holds
	// about 8,000 tokens of results, so the guard must cut.
	sizes := []int{1200, 1200, 2000, 1200, 1200, 1200}
	var rounds []scripted.Round
	for _, n := range sizes {
		rounds = append(rounds, scripted.Round{Calls: []scripted.Call{wordsCall(n)}})
	}
	rounds = append(rounds, scripted.Round{Text: "done"})
	out, m, ev, _, err := run(t, scripted.Script{Rounds: rounds}, setup{
		window: window.Config{Model: "gpt-4o", Window: 10_000, MaxOutput: 1_000, ShortenTo: 200},
		opts:   loop.Options{MaxRounds: 10},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	reqs := m.Requests()
	if len(reqs) != 7 || out.Answer != "done" {
		t.Fatalf("%d requests, answer %q: want 7 and done (no compaction)", len(reqs), out.Answer)
	}
	res := results(reqs[6])
	if len(res) != 6 {
		t.Fatalf("the last request holds %d results", len(res))
	}
	// The largest old result goes first, then the oldest of the rest; the
	// latest result, which the model has not read yet, is never cut.
	if !strings.Contains(res[2].Content, shortMarker) {
		t.Errorf("the largest old result (2,000 words) was not shortened")
	}
	if !strings.Contains(res[0].Content, shortMarker) {
		t.Errorf("the oldest result was not shortened after the largest")
	}
	if strings.Contains(res[5].Content, shortMarker) || strings.Contains(res[4].Content, shortMarker) {
		t.Errorf("a recent result was shortened before older ones")
	}
	if !strings.Contains(res[2].Content, `Call words again with the same arguments ({"n":2000})`) {
		t.Errorf("the marker does not say how to get the result again: %s", res[2].Content)
	}
	// Earlier requests went out whole.
	for _, r := range results(reqs[5]) {
		if strings.Contains(r.Content, shortMarker) {
			t.Errorf("request 6 already had a shortened result")
		}
	}
	if w := ev.warnings(event.WarnGuard); len(w) != 1 || !strings.Contains(w[0], "shortened") {
		t.Errorf("guard warnings %q", w)
	}
}

const summaryText = "Goal: count the words. Progress: files 1-6 counted. Remaining: answer."

// longRounds returns n rounds whose narration is `words` tokens long, each
// with a small call: history the guard cannot shorten.
func longRounds(n, words_ int) []scripted.Round {
	var out []scripted.Round
	for i := range n {
		out = append(out, scripted.Round{Text: fmt.Sprintf("Step %d.", i+1) + words(words_), Calls: []scripted.Call{wordsCall(5 + i)}})
	}
	return out
}

func TestGuardCompactsWhenShorteningIsNotEnough(t *testing.T) {
	// Narration is history, not a tool result: after six rounds of 1,400
	// words (about 9,500 tokens with the answer's room, past 9,000) the
	// guard has nothing to shorten and compacts through the model. The
	// summary request is phase compact; the request after it holds the
	// summary, the user's message and the open round.
	rounds := longRounds(6, 1400)
	rounds = append(rounds,
		scripted.Round{Text: summaryText, Expect: []scripted.Expect{{ToolChoice: llm.ToolChoiceNone}, {LastUser: &scripted.TextExpect{Contains: "handoff summary"}}}},
		scripted.Round{Text: "There are many words."},
	)
	prompt := "Count the words in the corpus, file by file. Keep the totals per file."
	out, m, ev, j, err := run(t, scripted.Script{Rounds: rounds}, setup{
		window: window.Config{Model: "gpt-4o", Window: 10_000, MaxOutput: 1_000, SummaryMaxOutput: 500},
		opts:   loop.Options{MaxRounds: 10},
		prompt: prompt,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	reqs := m.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests, want 6 rounds, a summary and the answer", len(reqs))
	}
	sum := reqs[6]
	if sum.Phase != loop.PhaseCompact || sum.MaxOutputTokens != 500 {
		t.Errorf("summary request phase %q max output %d", sum.Phase, sum.MaxOutputTokens)
	}
	if out.Rounds != 7 {
		t.Errorf("rounds = %d, want 7: the summary is not a round", out.Rounds)
	}

	next := reqs[7]
	first := next.Items[0]
	if first.Origin != loop.OriginCompaction || first.Role != llm.RoleUser {
		t.Fatalf("the request after compaction starts with %s/%s, want the compaction", first.Role, first.Origin)
	}
	text := first.Text()
	if !strings.Contains(text, summaryText) || !strings.Contains(text, prompt) {
		t.Errorf("the compaction lacks the summary or the user's message verbatim:\n%s", text)
	}
	// The open round: the seventh assistant item with its call, then its
	// result, with a fresh call id.
	if len(next.Items) != 3 || next.Items[1].Role != llm.RoleAssistant || len(next.Items[1].Calls()) != 1 || next.Items[2].Role != llm.RoleTool {
		t.Fatalf("after the compaction: %d items, want the open call and its result", len(next.Items))
	}
	if !strings.HasPrefix(next.Items[1].Text(), "Step 6.") {
		t.Errorf("the kept round is not the latest: %.30q", next.Items[1].Text())
	}
	oldID := reqs[6].Items[len(reqs[6].Items)-2].Result().CallID
	if newID := next.Items[1].Calls()[0].ID; newID == oldID || next.Items[2].Result().CallID != newID {
		t.Errorf("kept call id %q (was %q), result answers %q", newID, oldID, next.Items[2].Result().CallID)
	}

	// The compaction is journaled, and a later turn starts from it.
	var journaled *llm.Item
	for i := range j.items {
		if j.items[i].Origin == loop.OriginCompaction {
			journaled = &j.items[i]
		}
	}
	if journaled == nil {
		t.Fatal("the compaction was not journaled")
	}
	if w := ev.warnings(event.WarnGuard); len(w) != 1 || !strings.Contains(w[0], "compacted") {
		t.Errorf("guard warnings %q", w)
	}

	_, m2, _, _, err := run(t, scripted.Script{Rounds: []scripted.Round{{Text: "hi"}}}, setup{
		window:  window.Config{Model: "gpt-4o", Window: 10_000, MaxOutput: 1_000},
		history: append(append([]llm.Item{llm.UserText("an old message")}, reqs[5].Items...), j.items...),
		prompt:  "next question",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Requests()[0].Items[0]; got.Origin != loop.OriginCompaction {
		t.Errorf("a later turn starts with %s/%s, want the latest compaction", got.Role, got.Origin)
	}
}

func TestGuardRefusesARequestThatCannotFit(t *testing.T) {
	// The system prompt alone is past the window: nothing is sent, not even
	// a summary request.
	out, m, _, _, err := run(t, scripted.Script{}, setup{
		window: window.Config{Model: "gpt-4o", Window: 2_000, MaxOutput: 500},
		opts:   loop.Options{System: words(3_000)},
	})
	if !errors.Is(err, llm.ContextWindowExceeded) {
		t.Fatalf("err = %v, want ContextWindowExceeded", err)
	}
	var le *llm.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "was not sent") {
		t.Errorf("error %v does not say the request was not sent", err)
	}
	if out.Status != loop.StatusFailed || len(m.Requests()) != 0 {
		t.Errorf("status %s after %d requests; want failed after none", out.Status, len(m.Requests()))
	}
}

func TestGuardRefusesMidTurnWithoutAForcedRound(t *testing.T) {
	// A result too big for the window even after compaction (the cap is
	// off): the next request is refused and the turn fails at once instead
	// of trying a forced final round of the same size.
	out, m, _, _, err := run(t, scripted.Script{Rounds: []scripted.Round{{Calls: []scripted.Call{wordsCall(5_000)}}}}, setup{
		window: window.Config{Model: "gpt-4o", Window: 4_000, MaxOutput: 500, ResultCap: -1},
	})
	if !errors.Is(err, llm.ContextWindowExceeded) || out.Status != loop.StatusFailed {
		t.Fatalf("status %s err %v, want failed with ContextWindowExceeded", out.Status, err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d requests, want only the first", n)
	}
}

func TestProviderContextErrorCompactsOnceAndRetries(t *testing.T) {
	tooLong := &scripted.ErrorSpec{Kind: llm.ContextWindowExceeded, Status: 400, Message: "prompt is too long"}
	tests := []struct {
		name       string
		rounds     []scripted.Round
		wantStatus loop.Status
	}{
		{
			name: "the retry gets through",
			rounds: []scripted.Round{
				{Calls: []scripted.Call{wordsCall(50)}},
				{Error: tooLong},
				{Text: summaryText},
				{Text: "answered after compaction"},
			},
			wantStatus: loop.StatusCompleted,
		},
		{
			name: "the retry is refused too: no second compaction",
			rounds: []scripted.Round{
				{Calls: []scripted.Call{wordsCall(50)}},
				{Error: tooLong},
				{Text: summaryText},
				{Error: tooLong},
				{Error: tooLong}, // the forced final round
			},
			wantStatus: loop.StatusFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, m, _, _, err := run(t, scripted.Script{Rounds: tt.rounds}, setup{
				window: window.Config{Model: "claude-sonnet-4-5", Window: 200_000, MaxOutput: 8_000},
			})
			if out.Status != tt.wantStatus {
				t.Fatalf("status %s (err %v), want %s", out.Status, err, tt.wantStatus)
			}
			if err := m.Verify(); err != nil {
				t.Error(err)
			}
			compactions := 0
			for _, req := range m.Requests() {
				if req.Phase == loop.PhaseCompact {
					compactions++
				}
			}
			if compactions != 1 {
				t.Errorf("%d compactions, want 1", compactions)
			}
			reqs := m.Requests()
			if len(reqs) < 4 {
				t.Fatalf("%d requests: no retry after the compaction", len(reqs))
			}
			retry := reqs[3]
			if retry.Items[0].Origin != loop.OriginCompaction || !strings.Contains(retry.Items[0].Text(), summaryText) {
				t.Errorf("the retry does not start from the compaction")
			}
			if tt.wantStatus == loop.StatusCompleted && out.Answer != "answered after compaction" {
				t.Errorf("answer %q", out.Answer)
			}
			if tt.wantStatus == loop.StatusFailed && !errors.Is(err, llm.ContextWindowExceeded) {
				t.Errorf("err = %v, want the provider's ContextWindowExceeded", err)
			}
		})
	}
}

func TestContextEventAfterEachRound(t *testing.T) {
	// The provider's count is the input of the request it answered; the
	// next request, unreported, is estimated from it.
	rounds := []scripted.Round{
		{Calls: []scripted.Call{wordsCall(300)}, Usage: llm.Usage{InputTokens: 5_000, OutputTokens: 20}},
		{Text: "done"},
	}
	_, _, ev, _, err := run(t, scripted.Script{Rounds: rounds}, setup{
		window: window.Config{Model: "gpt-4o", Window: 100_000, MaxOutput: 4_000,
			Blocks: []window.Block{{Segment: window.Instructions, Text: "Follow AGENTS.md."}}},
		opts: loop.Options{System: "You are rein.\nFollow AGENTS.md."},
	})
	if err != nil {
		t.Fatal(err)
	}
	reps := ev.of(event.Context)
	if len(reps) != 2 {
		t.Fatalf("%d context events, want one per round", len(reps))
	}
	first, second := reps[0].Context, reps[1].Context
	if first.Source != "provider" || first.Input != 5_000 {
		t.Errorf("round 1: source %s input %d, want the provider's 5,000", first.Source, first.Input)
	}
	if second.Source != "estimate" || second.Input <= 5_000+250 || second.Input > 5_000+800 {
		t.Errorf("round 2: source %s input %d, want the provider's 5,000 plus the ~300-token result", second.Source, second.Input)
	}
	for _, r := range []*event.ContextReport{first, second} {
		n := 0
		names := map[string]int{}
		for _, s := range r.Segments {
			n += s.Tokens
			names[s.Name] = s.Tokens
		}
		if n != r.Total || r.Total != 100_000 || r.Reserve != 4_000 || names["reserve"] != 4_000 {
			t.Errorf("segments add up to %d; total %d, reserve %d", n, r.Total, r.Reserve)
		}
		if names["instructions"] == 0 || names["system"] == 0 || names["tools"] == 0 || names["history"] == 0 {
			t.Errorf("segments %v", r.Segments)
		}
	}
	if n := second.Segments[window.ToolResults].Tokens; n < 250 {
		t.Errorf("round 2 tool results %d tokens, want the ~300-word result", n)
	}
}

func TestProviderUsageWinsOverTheEstimate(t *testing.T) {
	// The estimate of this small thread is far under 90 %, but the provider
	// counted 8,500 of a 10,000 window (say, images): with 1,000 kept for
	// the answer the guard believes the provider and compacts before the
	// next request.
	rounds := []scripted.Round{
		{Calls: []scripted.Call{wordsCall(50)}, Usage: llm.Usage{InputTokens: 8_500}},
		{Text: summaryText},
		{Text: "done"},
	}
	out, m, _, _, err := run(t, scripted.Script{Rounds: rounds}, setup{
		window: window.Config{Model: "gpt-4o", Window: 10_000, MaxOutput: 1_000, SummaryMaxOutput: 400},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	if reqs := m.Requests(); len(reqs) != 3 || reqs[1].Phase != loop.PhaseCompact || out.Answer != "done" {
		t.Errorf("requests %d (second phase %q), answer %q: want a compaction before round 2", len(reqs), reqs[1].Phase, out.Answer)
	}
}

func TestResultsAreCappedWhenRecorded(t *testing.T) {
	rounds := []scripted.Round{
		{Calls: []scripted.Call{wordsCall(30_000)}},
		{Text: "done", Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Contains: "were cut from the middle of this output"}}}},
	}
	_, m, _, j, err := run(t, scripted.Script{Rounds: rounds}, setup{
		window: window.Config{Model: "gpt-4o", Window: 400_000, ResultCap: 2_000},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	for _, it := range j.items {
		if r := it.Result(); r != nil && len(r.Content) > 20_000 {
			t.Errorf("a %d-byte result was journaled uncapped", len(r.Content))
		}
	}
}

func TestManualCompaction(t *testing.T) {
	w, err := window.New(window.Config{Model: "gpt-4o", Window: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{Rounds: []scripted.Round{{Text: summaryText}}}, scripted.RecordRequests())
	j := &journal{}
	e, err := loop.New(loop.Options{Model: m, Window: w, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	history := []llm.Item{
		llm.UserText("first question"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "first answer"}}},
		llm.UserText("second question"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "second answer"}}},
	}
	out, err := e.Compact(context.Background(), loop.Turn{ThreadID: "th", History: history})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(); err != nil {
		t.Error(err)
	}
	if out.StopReason != loop.StopCompacted || len(out.Items) != 1 || out.Items[0].Origin != loop.OriginCompaction {
		t.Fatalf("outcome %s with %d items", out.StopReason, len(out.Items))
	}
	text := out.Items[0].Text()
	for _, want := range []string{summaryText, "first question", "second question"} {
		if !strings.Contains(text, want) {
			t.Errorf("the compaction lacks %q", want)
		}
	}
	if len(j.items) != 1 || j.items[0].Origin != loop.OriginCompaction {
		t.Errorf("journaled %d items", len(j.items))
	}
	if _, err := e.Compact(context.Background(), loop.Turn{ThreadID: "th"}); err == nil {
		t.Error("compacting an empty thread succeeded")
	}
}
