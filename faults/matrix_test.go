package faults_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// Scripted rounds the rows are built from.
var (
	// lookup is a narration round: a preamble and one weather call.
	lookup = testkit.Round{Text: "Let me check.", Calls: []testkit.MockCall{{Name: "weather", Args: `{"location":"Florence"}`}}}
	// final is the finish round.
	final = testkit.Round{Text: "It is 31 °C and sunny in Florence."}
)

// cutText is the text of a round cut after it was shown.
const cutText = "It is 31 °C and"

// calls returns a round that makes the calls, each given as name and
// arguments.
func calls(nameArgs ...string) testkit.Round {
	var r testkit.Round
	for i := 0; i+1 < len(nameArgs); i += 2 {
		r.Calls = append(r.Calls, testkit.MockCall{Name: nameArgs[i], Args: nameArgs[i+1]})
	}
	return r
}

// tenCalls is a round of ten weather calls for ten different cities.
func tenCalls() testkit.Round {
	var args []string
	for _, city := range []string{"Florence", "Rome", "Milan", "Turin", "Naples", "Genoa", "Bologna", "Venice", "Bari", "Palermo"} {
		args = append(args, "weather", fmt.Sprintf(`{"location":%q}`, city))
	}
	return calls(args...)
}

// faultRound is a round that fails with f and says nothing else.
func faultRound(f testkit.Fault) testkit.Round { return testkit.Round{Fault: f} }

// row is one fault of the matrix. The expected outcome follows DESIGN §2
// and §3; each row's comment says why.
type row struct {
	name string
	// only restricts the row to one protocol ("" runs it on all three).
	only   string
	rounds []testkit.Round
	status loop.Status
	stop   loop.StopReason
	// modelRounds is Outcome.Rounds: model calls made, retries not
	// counted (-1: depends on the protocol, not checked).
	modelRounds int
	// requests is how many requests the mock must receive (0: one per
	// scripted round).
	requests int
	// retries is how many times llm.WithRetry retried (waits and retry
	// events).
	retries int
	// check holds the row's own checks.
	check func(t *testing.T, r *turnRun)
}

// Backoff of the default retry policy: 200 ms with a jitter of ±20 %.
const (
	backoffMin = 160 * time.Millisecond
	backoffMax = 240 * time.Millisecond
)

var rows = []row{
	{
		// §2.6: 429 is transient and retried; the server's Retry-After wins
		// over the backoff. The turn never notices.
		name:        "429 is retried after the server's Retry-After",
		rounds:      []testkit.Round{lookup, {Fault: testkit.Fault429, RetryAfter: "2"}, final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check: func(t *testing.T, r *turnRun) {
			if r.waits[0] != 2*time.Second {
				t.Errorf("waited %v before the retry, want the server's Retry-After of 2s", r.waits[0])
			}
			if e := r.events.of(event.Retry)[0]; !strings.Contains(e.Content, "rate_limited") {
				t.Errorf("the retry event says %q, want the rate limit named", e.Content)
			}
		},
	},
	{
		// §2.6: 5xx is transient: retried with backoff.
		name:        "500 is retried with backoff",
		rounds:      []testkit.Round{lookup, faultRound(testkit.Fault500), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check:       backoff,
	},
	{
		// §2.6: a proxy's 502 with an HTML body is a server error all the
		// same.
		name:        "502 from a proxy is retried with backoff",
		rounds:      []testkit.Round{lookup, faultRound(testkit.Fault502), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check:       backoff,
	},
	{
		name:        "503 is retried with backoff",
		rounds:      []testkit.Round{lookup, faultRound(testkit.Fault503), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check:       backoff,
	},
	{
		// Anthropic's overloaded answer; twice in a row, so the backoff
		// doubles.
		name:        "529 overloaded is retried with backoff",
		only:        "anthropic",
		rounds:      []testkit.Round{lookup, faultRound(testkit.FaultOverloaded), faultRound(testkit.FaultOverloaded), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     2,
		check: func(t *testing.T, r *turnRun) {
			backoff(t, r)
			if w := r.waits[1]; w < 2*backoffMin || w >= 2*backoffMax {
				t.Errorf("second wait %v, want the backoff doubled (%v..%v)", w, 2*backoffMin, 2*backoffMax)
			}
		},
	},
	{
		// §2.6: a connection reset before anything was shown is retried.
		name:        "reset before visible output is retried",
		rounds:      []testkit.Round{lookup, faultRound(testkit.FaultResetBeforeOutput), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check:       backoff,
	},
	{
		// §2.6: once part of the round was shown a retry could show it
		// twice, so the error surfaces as retryable (Shown) and the turn
		// fails with provider_error — not forced_error (§2.3), which would
		// paper over an answer the user saw cut off.
		name:        "reset after visible output fails the turn as retryable",
		rounds:      []testkit.Round{lookup, {Text: cutText, Fault: testkit.FaultResetAfterOutput}},
		status:      loop.StatusFailed,
		stop:        loop.StopProviderError,
		modelRounds: 1,
		check:       shownCut(llm.StreamInterrupted),
	},
	{
		// §2.6: a stream that ends without its terminal event is
		// interrupted; with nothing shown it is retried.
		name:        "stream without its terminal event is retried",
		rounds:      []testkit.Round{lookup, faultRound(testkit.FaultNoTerminal), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		retries:     1,
		check:       backoff,
	},
	{
		// The same cut after the model started a call: the call was shown,
		// so no retry and the turn fails as retryable; whatever of the
		// call reached the engine is recorded with its result, so the
		// thread stays valid for the next turn (§2.5).
		name:        "stream without its terminal event after a call fails the turn, the call answered",
		rounds:      []testkit.Round{lookup, {Calls: []testkit.MockCall{{Name: "weather", Args: `{"location":"Rome"}`}}, Fault: testkit.FaultNoTerminal}},
		status:      loop.StatusFailed,
		stop:        loop.StopProviderError,
		modelRounds: -1,
		check: func(t *testing.T, r *turnRun) {
			e := r.modelError(t)
			if e.Kind != llm.StreamInterrupted || !e.Shown {
				t.Errorf("error %v (kind %s, shown %v), want a shown stream_interrupted", e, e.Kind, e.Shown)
			}
			rome := false
			for _, c := range r.calls() {
				rome = rome || strings.Contains(c.Args, "Rome")
			}
			if want := int32(1 + b2i(rome)); r.tools.weatherRuns.Load() != want {
				t.Errorf("weather ran %d times, want %d (the Rome call recorded: %v)", r.tools.weatherRuns.Load(), want, rome)
			}
		},
	},
	{
		// A data line that is not JSON breaks the stream; it came after
		// visible text, so, as for a reset, the turn fails as retryable.
		name:        "malformed SSE line after visible output fails the turn as retryable",
		rounds:      []testkit.Round{lookup, {Text: cutText, Fault: testkit.FaultMalformedLine}},
		status:      loop.StatusFailed,
		stop:        loop.StopProviderError,
		modelRounds: 1,
		check:       shownCut(llm.StreamInterrupted),
	},
	{
		// Anthropic gives up mid-stream with an error event (overloaded)
		// after text was shown: a server error, but shown, so the turn
		// fails as retryable like a reset.
		name:        "error event after visible output fails the turn as retryable",
		only:        "anthropic",
		rounds:      []testkit.Round{lookup, {Text: cutText, Fault: testkit.FaultStreamError}},
		status:      loop.StatusFailed,
		stop:        loop.StopProviderError,
		modelRounds: 1,
		check:       shownCut(llm.ServerError),
	},
	{
		// §3: invalid arguments do not run; the model gets an actionable
		// error result and answers.
		name:        "invalid JSON arguments are answered with an error and not run",
		rounds:      []testkit.Round{calls("weather", `{"location": "Flor`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res := onlyResult(t, r)
			if res.Status != llm.ResultError || !strings.Contains(res.Content, "not valid JSON") {
				t.Errorf("result %s %q, want an error saying the arguments are not valid JSON", res.Status, res.Content)
			}
			if c := r.calls()[0]; c.Args != `{"location": "Flor` {
				t.Errorf("the call's arguments were recorded as %q, want them as received", c.Args)
			}
			if n := r.tools.weatherRuns.Load(); n != 0 {
				t.Errorf("weather ran %d times, want 0", n)
			}
		},
	},
	{
		// §3: a tool that does not exist is refused with the tools that do.
		name:        "unknown tool is answered with the available tools",
		rounds:      []testkit.Round{calls("teleport", `{"to":"Mars"}`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res := onlyResult(t, r)
			if want := `no tool named "teleport" here; available: explode, hang, weather`; res.Status != llm.ResultError || res.Content != want {
				t.Errorf("result %s %q, want error %q", res.Status, res.Content, want)
			}
		},
	},
	{
		// §3: the check is against this turn's composed list, not against
		// every tool the program has.
		name:        "tool not in this turn is refused and not run",
		rounds:      []testkit.Round{calls("delete_file", `{"path":"notes.txt"}`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			if _, ok := r.tools.registry.Get("delete_file"); !ok {
				t.Fatal("delete_file is not registered anywhere; the row tests nothing")
			}
			res := onlyResult(t, r)
			if want := `no tool named "delete_file" here; available: explode, hang, weather`; res.Status != llm.ResultError || res.Content != want {
				t.Errorf("result %s %q, want error %q", res.Status, res.Content, want)
			}
			if n := r.tools.deleteRuns.Load(); n != 0 {
				t.Errorf("delete_file ran %d times, want 0", n)
			}
		},
	},
	{
		// §3: at most 8 calls run per round; the rest are answered not_run
		// so that pairing stays valid.
		name:        "more than 8 calls: the 9th and 10th are answered not run",
		rounds:      []testkit.Round{tenCalls(), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res := r.results()
			if len(res) != 10 {
				t.Fatalf("%d results, want 10", len(res))
			}
			for i, x := range res {
				switch {
				case i < 8 && x.Status != llm.ResultOK:
					t.Errorf("call %d: %s %q, want it run", i+1, x.Status, x.Content)
				case i >= 8 && (x.Status != llm.ResultNotRun || !strings.Contains(x.Content, "at most 8 calls")):
					t.Errorf("call %d: %s %q, want not_run naming the limit of 8", i+1, x.Status, x.Content)
				}
			}
			if n := r.tools.weatherRuns.Load(); n != 8 {
				t.Errorf("weather ran %d times, want 8", n)
			}
			if !r.events.warned(event.WarnTooManyCall) {
				t.Error("no too_many_calls warning")
			}
		},
	},
	{
		// §3: identical calls (same name, canonical arguments) run once; the
		// duplicate's result points at the first.
		name:        "duplicate calls run once",
		rounds:      []testkit.Round{calls("weather", `{"location":"Florence"}`, "weather", `{"location":"Rome"}`, "weather", `{ "location" : "Florence" }`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res, cs := r.results(), r.calls()
			if len(res) != 3 || len(cs) != 3 {
				t.Fatalf("%d calls and %d results, want 3 and 3", len(cs), len(res))
			}
			if res[0].Status != llm.ResultOK || res[1].Status != llm.ResultOK {
				t.Errorf("the distinct calls: %s and %s, want both run", res[0].Status, res[1].Status)
			}
			if res[2].Status != llm.ResultDuplicate || !strings.Contains(res[2].Content, cs[0].ID) {
				t.Errorf("the duplicate: %s %q, want duplicate pointing at %s", res[2].Status, res[2].Content, cs[0].ID)
			}
			if n := r.tools.weatherRuns.Load(); n != 2 {
				t.Errorf("weather ran %d times, want 2", n)
			}
		},
	},
	{
		// §2.3: a model error on round 1 fails the turn with a typed error;
		// a request too long is not transient, so it is not retried (and the
		// matrix's engine has no context window, so nothing compacts it).
		// All three protocols type it ContextWindowExceeded: Anthropic's
		// plain 400 invalid_request_error is told by the fixed opening of
		// its message, "prompt is too long" (llm/anthropic mapError).
		name:        "context-length error fails the turn with a typed error, not retried",
		rounds:      []testkit.Round{faultRound(testkit.FaultContextLength)},
		status:      loop.StatusFailed,
		stop:        loop.StopProviderError,
		modelRounds: 0,
		check: func(t *testing.T, r *turnRun) {
			want := llm.ContextWindowExceeded
			if e := r.modelError(t); e.Kind != want || e.Status != 400 {
				t.Errorf("error %v: kind %s status %d, want %s 400", e, e.Kind, e.Status, want)
			}
			if len(r.out.Items) != 1 || r.out.Items[0].Role != llm.RoleUser {
				t.Errorf("the turn left %s, want only the user's input", itemIDs(r.out.Items))
			}
		},
	},
	{
		// §2.3: no visible text (only reasoning) earns one nudge directive;
		// the model then answers and the turn finishes.
		name:        "reasoning-only round is nudged once, then answered",
		rounds:      []testkit.Round{{Reasoning: "The user wants the weather in Florence."}, final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			nudged(t, r)
			if it := r.out.Items[1]; it.Role != llm.RoleAssistant || len(it.Parts) == 0 || it.Parts[0].Kind != llm.PartReasoning {
				t.Errorf("item 2 is %s %+v, want the reasoning-only round kept as returned", it.Role, it.Parts)
			}
		},
	},
	{
		// §2.3: empty again after the nudge: failed/empty_answer, never a
		// canned answer reported as success. Each empty answer is a model
		// call made, so both count as rounds (§2.4).
		name:        "empty answer twice fails the turn with empty_answer",
		rounds:      []testkit.Round{{}, {}},
		status:      loop.StatusFailed,
		stop:        loop.StopEmptyAnswer,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			nudged(t, r)
			if !errors.Is(r.err, loop.ErrEmptyAnswer) {
				t.Errorf("error %v, want loop.ErrEmptyAnswer", r.err)
			}
			if r.out.Answer != "" {
				t.Errorf("answer %q, want none", r.out.Answer)
			}
		},
	},
	{
		// §2.3, §2.2: a round cut by the output limit before any visible
		// text (a reasoning model that spent its tokens thinking, the
		// thinking not returned) is a truncated round: a continue
		// directive, and it counts as a round. Every such round counts, so
		// the turn stops at the hard ceiling of MaxRounds +
		// MaxSettlementRounds + 1 = 12 model calls; the forced round is
		// empty too, so the turn fails with empty_answer. The script has
		// an answer after the twelve, which a turn past the ceiling would
		// read.
		name:        "rounds cut before any visible text stop at the round ceiling",
		rounds:      append(slices.Repeat([]testkit.Round{{Finish: truncated}}, 12), final),
		requests:    12,
		status:      loop.StatusFailed,
		stop:        loop.StopEmptyAnswer,
		modelRounds: 12,
		check: func(t *testing.T, r *turnRun) {
			if r.out.SettlementRounds != 3 {
				t.Errorf("%d settlement rounds, want 3", r.out.SettlementRounds)
			}
			if !r.events.warned(event.WarnTruncated) {
				t.Error("no truncated warning")
			}
		},
	},
	{
		// §3: a tool that ignores its deadline is abandoned after the grace
		// period and answered with a deadline error; the turn goes on.
		name:        "a tool that hangs is answered with a deadline error",
		rounds:      []testkit.Round{calls("hang", `{}`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res := onlyResult(t, r)
			if want := fmt.Sprintf("hang did not finish within its deadline of %s", hangDeadline); res.Status != llm.ResultError ||
				!strings.Contains(res.Content, want) || !strings.Contains(res.Content, "abandoned") {
				t.Errorf("result %s %q, want an error saying %q and that it was abandoned", res.Status, res.Content, want)
			}
			if n := r.tools.hangStarted.Load(); n != 1 {
				t.Errorf("hang started %d times, want 1", n)
			}
		},
	},
	{
		// §3: a panic becomes an error result; the turn goes on.
		name:        "a tool that panics becomes an error result",
		rounds:      []testkit.Round{calls("explode", `{}`), final},
		status:      loop.StatusCompleted,
		stop:        loop.StopFinished,
		modelRounds: 2,
		check: func(t *testing.T, r *turnRun) {
			res := onlyResult(t, r)
			if res.Status != llm.ResultError || !strings.Contains(res.Content, "explode panicked") || !strings.Contains(res.Content, "index out of range") {
				t.Errorf("result %s %q, want an error naming the panic", res.Status, res.Content)
			}
		},
	},
}

// TestFaultMatrix runs every row over every protocol.
func TestFaultMatrix(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			for _, rw := range rows {
				if rw.only != "" && rw.only != p.name {
					continue
				}
				count(p.name, t.Run(rw.name, func(t *testing.T) { runRow(t, p, rw) }))
			}
		})
	}
	if s := summary(); s != "" {
		t.Log(s)
	}
}

// runRow runs one row's turn and checks it.
func runRow(t *testing.T, p protocol, rw row) {
	// Registered first, so it runs last: after the store, the transport
	// and the mock server have closed, nothing of the row may be left.
	t.Cleanup(func() {
		if err := goleak.Find(); err != nil {
			t.Errorf("goroutines outlived the row: %v", err)
		}
	})
	r := runTurn(t, p, rw.rounds)

	if r.out.Status != rw.status || r.out.StopReason != rw.stop {
		t.Errorf("outcome %s/%s (error: %v), want %s/%s", r.out.Status, r.out.StopReason, r.err, rw.status, rw.stop)
	}
	if failed := rw.status == loop.StatusFailed; failed != (r.err != nil) || r.out.Err != r.err {
		t.Errorf("Run returned error %v and Outcome.Err %v for a %s turn", r.err, r.out.Err, r.out.Status)
	}
	if rw.modelRounds >= 0 && r.out.Rounds != rw.modelRounds {
		t.Errorf("%d rounds, want %d", r.out.Rounds, rw.modelRounds)
	}
	want := rw.requests
	if want == 0 {
		want = len(rw.rounds)
	}
	if len(r.reqs) != want {
		t.Errorf("the mock received %d requests, want %d", len(r.reqs), want)
	}
	if got := len(r.waits); got != rw.retries {
		t.Errorf("%d retries (waits %v), want %d", got, r.waits, rw.retries)
	}
	if got := len(r.events.of(event.Retry)); got != rw.retries {
		t.Errorf("%d retry events, want %d", got, rw.retries)
	}
	if rw.status == loop.StatusCompleted {
		if r.out.Answer != final.Text {
			t.Errorf("answer %q, want %q", r.out.Answer, final.Text)
		}
		resultsSentBack(t, r)
	}
	checkInvariants(t, r)
	checkStored(t, r)
	if rw.check != nil && !t.Failed() {
		rw.check(t, r)
	}
}

// resultsSentBack checks that the model read every result of a completed
// turn: the last request, the finish round's, carries each one with its
// content.
func resultsSentBack(t *testing.T, r *turnRun) {
	t.Helper()
	if len(r.reqs) == 0 {
		return
	}
	sent := make(map[string]string)
	for _, it := range r.reqs[len(r.reqs)-1].Items {
		if res := it.Result(); res != nil {
			sent[res.CallID] = res.Content
		}
	}
	for _, res := range r.results() {
		if got, ok := sent[res.CallID]; !ok || got != res.Content {
			t.Errorf("result of %s: the model got %q (sent: %v), the turn recorded %q", res.CallID, got, ok, res.Content)
		}
	}
}

// backoff checks that the first retry waited the default backoff.
func backoff(t *testing.T, r *turnRun) {
	t.Helper()
	if w := r.waits[0]; w < backoffMin || w >= backoffMax {
		t.Errorf("waited %v before the retry, want the backoff of 200 ms ±20 %%", w)
	}
	if e := r.events.of(event.Retry)[0]; e.Attempt != 2 || e.Max != 5 {
		t.Errorf("retry event %d/%d, want 2/5", e.Attempt, e.Max)
	}
}

// shownCut returns the check of a round cut after its text was shown: the
// text reached the user, and the error, of the kind given, is marked Shown,
// so no longer transient.
func shownCut(kind llm.ErrorKind) func(t *testing.T, r *turnRun) {
	return func(t *testing.T, r *turnRun) {
		t.Helper()
		e := r.modelError(t)
		if e.Kind != kind || !e.Shown || llm.Transient(r.err) {
			t.Errorf("error %v: kind %s, shown %v, transient %v; want a shown, no longer transient %s", e, e.Kind, e.Shown, llm.Transient(r.err), kind)
		}
		var shown strings.Builder
		for _, ev := range r.events.of(event.TextDelta) {
			if ev.Round == 2 {
				shown.WriteString(ev.Delta)
			}
		}
		if shown.Len() == 0 || !strings.HasPrefix(cutText, shown.String()) {
			t.Errorf("round 2 showed %q, want the start of %q", shown.String(), cutText)
		}
	}
}

// nudged checks the one nudge directive of an empty round, sent to the
// model with the next request.
func nudged(t *testing.T, r *turnRun) {
	t.Helper()
	d := r.directives()
	if len(d) != 1 {
		t.Fatalf("%d directives %q, want one nudge", len(d), d)
	}
	if !r.events.warned(event.WarnEmptyNudge) {
		t.Error("no empty_nudge warning")
	}
	items := r.reqs[1].Items
	if last := items[len(items)-1]; last.Role != llm.RoleUser || !strings.Contains(last.Text(), d[0]) {
		t.Errorf("the second request ends with %s %q, want the nudge %q", last.Role, last.Text(), d[0])
	}
}

// onlyResult returns the turn's one result.
func onlyResult(t *testing.T, r *turnRun) *llm.Result {
	t.Helper()
	res := r.results()
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	return res[0]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
