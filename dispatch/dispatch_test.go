package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

func TestMoreThanMaxCallsAreAnsweredNotRun(t *testing.T) {
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	rec := &recorder{}
	d := New(Config{Tools: tool.NewSet(ro), Events: rec})
	var cs []llm.Call
	for i := range 10 {
		cs = append(cs, llm.Call{ID: fmt.Sprintf("c%d", i), Name: "ro", Args: fmt.Sprintf(`{"n":%d}`, i)})
	}
	b := runRound(t, d, cs)
	checkPairing(t, b, cs)
	for i, res := range b.Results {
		want := llm.ResultOK
		if i >= 8 {
			want = llm.ResultNotRun
		}
		if res.Status != want {
			t.Errorf("call %d: status %s, want %s (%q)", i, res.Status, want, res.Content)
		}
	}
	if got := ro.runs.Load(); got != 8 {
		t.Errorf("the tool ran %d times, want 8", got)
	}
	if c := b.Results[9].Content; !strings.Contains(c, "not run") || !strings.Contains(c, "at most 8") {
		t.Errorf("not-run text does not say why: %q", c)
	}
	if w := rec.of(event.Warning); len(w) != 1 || w[0].Code != event.WarnTooManyCall {
		t.Errorf("want one too_many_calls warning, got %+v", w)
	}
	if n := len(rec.of(event.Result)); n != 10 {
		t.Errorf("got %d result events, want 10", n)
	}
}

func TestMaxCallsIsConfigurable(t *testing.T) {
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	cs := calls("ro", `{"n":1}`, `{"n":2}`, `{"n":3}`)
	b := runRound(t, New(Config{Tools: tool.NewSet(ro), MaxCalls: 2}), cs)
	checkPairing(t, b, cs)
	if b.Results[1].Status != llm.ResultOK || b.Results[2].Status != llm.ResultNotRun {
		t.Errorf("statuses %s, %s; want ok, not_run", b.Results[1].Status, b.Results[2].Status)
	}
}

func TestResultsComeInCallOrderWhenCompletionsAreReversed(t *testing.T) {
	const n = 5
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		var a struct{ N int }
		_ = json.Unmarshal(c.Args, &a)
		time.Sleep(time.Duration(n-a.N) * 30 * time.Millisecond)
		return tool.Output{Text: fmt.Sprintf("result %d", a.N)}, nil
	}}
	var cs []llm.Call
	for i := range n {
		cs = append(cs, llm.Call{ID: fmt.Sprintf("c%d", i), Name: "ro", Args: fmt.Sprintf(`{"n":%d}`, i)})
	}
	b := runRound(t, New(Config{Tools: tool.NewSet(ro)}), cs)
	checkPairing(t, b, cs)
	for i := range n {
		if want := fmt.Sprintf("result %d", i); b.Results[i].Content != want {
			t.Errorf("result %d = %q, want %q", i, b.Results[i].Content, want)
		}
		if i > 0 && !b.Timings[i].End.Before(b.Timings[i-1].End) {
			t.Errorf("call %d did not finish before call %d; the test needs reversed completions", i, i-1)
		}
	}
}

func TestEarlyStartFinishesBeforeTheStreamEnds(t *testing.T) {
	finished := make(chan struct{})
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		time.Sleep(20 * time.Millisecond)
		close(finished)
		return tool.Output{Text: "done"}, nil
	}}
	r := New(Config{Tools: tool.NewSet(ro)}).Begin(context.Background(), RoundInfo{})
	r.Add(llm.Call{ID: "c0", Name: "ro", Args: `{}`})
	// The model is still streaming: Finish has not been called.
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not run before Finish")
	}
	// The tool has returned; its goroutine records the end right after.
	// The stream ends once it has: taking the time at once raced with that
	// record and failed now and then, on the old code as on the new.
	for {
		r.mu.Lock()
		settled := r.calls[0].settled
		r.mu.Unlock()
		if settled {
			break
		}
		time.Sleep(time.Millisecond)
	}
	streamEnd := time.Now()
	b := r.Finish()
	if b.Results[0].Status != llm.ResultOK || !b.Timings[0].End.Before(streamEnd) {
		t.Errorf("result %+v ended %v, stream ended %v", b.Results[0], b.Timings[0].End, streamEnd)
	}
}

func TestNoEarlyStartHoldsCallsUntilFinish(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   Config
		phase llm.Phase
	}{
		{"NoEarlyStart", Config{NoEarlyStart: true}, llm.PhaseExplore},
		{"forced final round", Config{}, llm.PhaseFinal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
			tt.cfg.Tools = tool.NewSet(ro)
			r := New(tt.cfg).Begin(context.Background(), RoundInfo{Phase: tt.phase})
			r.Add(llm.Call{ID: "c0", Name: "ro", Args: `{}`})
			time.Sleep(50 * time.Millisecond)
			if n := ro.runs.Load(); n != 0 {
				t.Fatalf("the call ran %d times before Finish", n)
			}
			if b := r.Finish(); b.Results[0].Status != llm.ResultOK || ro.runs.Load() != 1 {
				t.Errorf("after Finish: %+v, runs %d", b.Results[0], ro.runs.Load())
			}
		})
	}
}

const pathSchema = `{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"file to read"}},"required":["path"],"additionalProperties":false}`

func TestCallsAreCheckedBeforeTheyRun(t *testing.T) {
	read := &fake{spec: tool.Spec{Name: "read_file", Access: tool.ReadOnly, Schema: json.RawMessage(pathSchema)}}
	other := &fake{spec: tool.Spec{Name: "write_memory", Access: tool.Mutating}}
	_ = other // registered elsewhere, not in this turn's set
	set := tool.NewSet(read, &fake{spec: tool.Spec{Name: "glob", Access: tool.ReadOnly}})
	tests := []struct {
		name   string
		call   llm.Call
		status llm.ResultStatus
		has    []string
		lacks  []string
	}{
		{"unknown tool", llm.Call{Name: "reed_file", Args: `{}`}, llm.ResultError,
			[]string{`no tool named "reed_file" here; available: glob, read_file`}, nil},
		{"tool not in this turn's set", llm.Call{Name: "write_memory", Args: `{}`}, llm.ResultError,
			[]string{`no tool named "write_memory" here; available: glob, read_file`}, nil},
		{"invalid JSON", llm.Call{Name: "read_file", Args: `{"path":`}, llm.ResultError,
			[]string{"arguments are not valid JSON", "send one JSON object"}, nil},
		{"missing key", llm.Call{Name: "read_file", Args: `{}`}, llm.ResultError,
			[]string{`missing required field "path" (string): file to read`, "An identical call will be refused again"}, []string{"empty"}},
		{"empty value", llm.Call{Name: "read_file", Args: `{"path":""}`}, llm.ResultError,
			[]string{`field "path" is an empty string`}, []string{"missing"}},
		{"unknown field", llm.Call{Name: "read_file", Args: `{"path":"a","paht":"b"}`}, llm.ResultError,
			[]string{`unknown field "paht"`}, nil},
		{"valid", llm.Call{Name: "read_file", Args: `{"path":"a"}`}, llm.ResultOK, nil, nil},
		{"empty arguments for a tool without schema", llm.Call{Name: "glob", Args: ``}, llm.ResultOK, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := read.runs.Load()
			tt.call.ID = "c0"
			cs := []llm.Call{tt.call}
			b := runRound(t, New(Config{Tools: set}), cs)
			checkPairing(t, b, cs)
			res := b.Results[0]
			if res.Status != tt.status {
				t.Fatalf("status %s, want %s: %q", res.Status, tt.status, res.Content)
			}
			for _, s := range tt.has {
				if !strings.Contains(res.Content, s) {
					t.Errorf("result lacks %q:\n%s", s, res.Content)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(res.Content, s) {
					t.Errorf("result says %q:\n%s", s, res.Content)
				}
			}
			if tt.status != llm.ResultOK && read.runs.Load() != before {
				t.Error("a refused call ran")
			}
			if tt.status != llm.ResultOK && !b.Timings[0].Start.IsZero() {
				t.Error("a refused call has a start time")
			}
		})
	}
}

// Compiled schemas are shared by every dispatcher (a session makes one per
// turn): turns running at once check calls against the same validator, and
// a tool whose schema differs under the same name is judged by its own.
func TestSchemasAreSharedAcrossDispatchersAndFollowTheirTool(t *testing.T) {
	// pattern is not one of the keywords the walk judges alone, so the
	// library's validation runs too.
	const a = `{"type":"object","properties":{"path":{"type":"string","pattern":"^a"}},"required":["path"]}`
	const b = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	toolA := &fake{spec: tool.Spec{Name: "shared_schema", Access: tool.ReadOnly, Schema: json.RawMessage(a)}}
	toolB := &fake{spec: tool.Spec{Name: "shared_schema", Access: tool.ReadOnly, Schema: json.RawMessage(b)}}
	check := func(d *Dispatcher, args string) llm.ResultStatus {
		r := d.Begin(context.Background(), RoundInfo{})
		r.Add(llm.Call{ID: "c", Name: "shared_schema", Args: args})
		return r.Finish().Results[0].Status
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 50 {
				d := New(Config{Tools: tool.NewSet(toolA)})
				args, want := `{"path":"abc"}`, llm.ResultOK
				if (g+i)%2 == 1 {
					args, want = `{"path":"xyz"}`, llm.ResultError
				}
				if got := check(d, args); got != want && err == nil {
					err = fmt.Errorf("goroutine %d, round %d: %s gave %s, want %s", g, i, args, got, want)
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	dB, dA := New(Config{Tools: tool.NewSet(toolB)}), New(Config{Tools: tool.NewSet(toolA)})
	for _, c := range []struct {
		d    *Dispatcher
		args string
		want llm.ResultStatus
	}{
		{dB, `{"n":1}`, llm.ResultOK},
		{dB, `{"path":"abc"}`, llm.ResultError},
		{dA, `{"path":"abc"}`, llm.ResultOK},
		{dA, `{"n":1}`, llm.ResultError},
		{dB, `{"n":2}`, llm.ResultOK},
	} {
		if got := check(c.d, c.args); got != c.want {
			t.Errorf("%s: %s, want %s", c.args, got, c.want)
		}
	}
}

func TestIdenticalCallsRunOnce(t *testing.T) {
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	cs := []llm.Call{
		{ID: "a", Name: "ro", Args: `{"x":1,"y":[1,2]}`},
		{ID: "b", Name: "ro", Args: `{ "y": [1, 2], "x": 1 }`},
		{ID: "c", Name: "ro", Args: `{"x":2,"y":[1,2]}`},
		{ID: "d", Name: "ro", Args: `{"y":[1,2],"x":1.0}`},
	}
	b := runRound(t, New(Config{Tools: tool.NewSet(ro)}), cs)
	checkPairing(t, b, cs)
	want := []llm.ResultStatus{llm.ResultOK, llm.ResultDuplicate, llm.ResultOK, llm.ResultDuplicate}
	for i, w := range want {
		if b.Results[i].Status != w {
			t.Errorf("call %s: %s, want %s", cs[i].ID, b.Results[i].Status, w)
		}
	}
	if c := b.Results[1].Content; !strings.Contains(c, "call id a") {
		t.Errorf("duplicate does not point at the first call: %q", c)
	}
	if n := ro.runs.Load(); n != 2 {
		t.Errorf("tool ran %d times, want 2", n)
	}
}

func TestOnlyTheFirstPauseCallIsHonouredAndRunsLast(t *testing.T) {
	var askStart time.Time
	ask := &fake{spec: tool.Spec{Name: "ask_user", Pauses: true}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		askStart = time.Now()
		return tool.Output{Text: "waiting for the user", Pause: &tool.Pause{Kind: tool.PauseAskUser, Questions: []tool.Question{{ID: "q1", Prompt: "which?"}}}}, nil
	}}
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}, run: sleeper(60 * time.Millisecond)}
	cs := []llm.Call{
		{ID: "q", Name: "ask_user", Args: `{"q":"which?"}`},
		{ID: "r", Name: "ro", Args: `{}`},
		{ID: "q2", Name: "ask_user", Args: `{"q":"and?"}`},
		{ID: "r2", Name: "ro", Args: `{"n":2}`},
	}
	b := runRound(t, New(Config{Tools: tool.NewSet(ask, ro)}), cs)
	checkPairing(t, b, cs)
	if b.Pause == nil || b.Pause.Index != 0 || b.Pause.CallID != "q" || b.Pause.Pause.Questions[0].ID != "q1" {
		t.Fatalf("pause = %+v, want the first ask_user", b.Pause)
	}
	if r := b.Results[0]; r.Status != llm.ResultPending || r.Content != "waiting for the user" {
		t.Errorf("pause result = %+v", r)
	}
	if r := b.Results[2]; r.Status != llm.ResultNotRun || !strings.Contains(r.Content, "ask all questions in one call") {
		t.Errorf("second ask_user = %+v", r)
	}
	if n := ask.runs.Load(); n != 1 {
		t.Errorf("ask_user ran %d times", n)
	}
	for _, i := range []int{1, 3} {
		if askStart.Before(b.Timings[i].End) {
			t.Errorf("ask_user started at %v, before call %d ended at %v", askStart, i, b.Timings[i].End)
		}
	}
}

func TestATerminatingResultEndsTheTurn(t *testing.T) {
	fin := &fake{spec: tool.Spec{Name: "final", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Text: "the answer " + c.ID, Terminate: true}, nil
	}}
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	ask := &fake{spec: tool.Spec{Name: "ask_user", Pauses: true}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Pause: &tool.Pause{Kind: tool.PauseAskUser}}, nil
	}}
	cs := []llm.Call{
		{ID: "a", Name: "ro", Args: `{}`},
		{ID: "b", Name: "final", Args: `{"n":1}`},
		{ID: "c", Name: "final", Args: `{"n":2}`},
		{ID: "d", Name: "ask_user", Args: `{}`},
	}
	b := runRound(t, New(Config{Tools: tool.NewSet(fin, ro, ask)}), cs)
	checkPairing(t, b, cs)
	if b.Terminate != 1 {
		t.Errorf("Terminate = %d, want 1", b.Terminate)
	}
	if b.Pause != nil || b.Results[3].Status != llm.ResultNotRun {
		t.Errorf("a pause after a terminating call: pause %+v, result %+v", b.Pause, b.Results[3])
	}
	if b2 := runRound(t, New(Config{Tools: tool.NewSet(ro)}), calls("ro", `{}`)); b2.Terminate != -1 || b2.Pause != nil {
		t.Errorf("a plain round: Terminate %d, Pause %v", b2.Terminate, b2.Pause)
	}
}

func TestToolFailuresBecomeResults(t *testing.T) {
	home := "/home/ann"
	rd := redact.New(redact.Options{Home: home, Secrets: []string{"s3cret-value-42"}})
	tests := []struct {
		name  string
		run   func(ctx context.Context, c tool.Call) (tool.Output, error)
		check func(t *testing.T, content string)
	}{
		{"returned error is an actionable JSON object", func(ctx context.Context, c tool.Call) (tool.Output, error) {
			return tool.Output{}, errors.New("open /home/ann/.netrc: permission denied")
		}, func(t *testing.T, content string) {
			var v struct{ Error, Detail string }
			if err := json.Unmarshal([]byte(content), &v); err != nil {
				t.Fatalf("not JSON: %q", content)
			}
			if v.Error != "t failed" || v.Detail != "open ~/.netrc: permission denied" {
				t.Errorf("got %+v", v)
			}
		}},
		{"error text is redacted", func(ctx context.Context, c tool.Call) (tool.Output, error) {
			return tool.Output{}, fmt.Errorf("401 with key sk-abc123DEF456ghi789JKL012 and s3cret-value-42")
		}, func(t *testing.T, content string) {
			if strings.Contains(content, "sk-abc") || strings.Contains(content, "s3cret") || !strings.Contains(content, redact.Mask) {
				t.Errorf("secret not redacted: %q", content)
			}
		}},
		{"failed output keeps the tool's text, redacted", func(ctx context.Context, c tool.Call) (tool.Output, error) {
			return tool.Output{Text: "exit 1: Authorization: Bearer abcdefghijkl", Failed: true}, nil
		}, func(t *testing.T, content string) {
			if content != "exit 1: Authorization: "+redact.Mask {
				t.Errorf("got %q", content)
			}
		}},
		{"panic value is in the text, redacted", func(ctx context.Context, c tool.Call) (tool.Output, error) {
			panic("boom with ghp_0123456789abcdefghijABCDEFGHIJ0123")
		}, func(t *testing.T, content string) {
			if !strings.Contains(content, "t panicked") || !strings.Contains(content, "boom with "+redact.Mask) {
				t.Errorf("got %q", content)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: tt.run}
			d := New(Config{Tools: tool.NewSet(f), Redact: rd.Redact, Events: rec})
			cs := calls("t", `{}`)
			b := runRound(t, d, cs)
			checkPairing(t, b, cs)
			if b.Results[0].Status != llm.ResultError {
				t.Fatalf("status %s, want error", b.Results[0].Status)
			}
			tt.check(t, b.Results[0].Content)
			ev := rec.of(event.Result)
			if len(ev) != 1 || ev[0].Content != b.Results[0].Content {
				t.Errorf("result event %+v does not carry the redacted content", ev)
			}
		})
	}
}

// TestSuccessfulResultsAreRedacted pins DESIGN §7.4: everything a tool
// returns is redacted, not only its failures — a file read that holds a
// key must not hand the key to the model, the events or the store (Meta).
func TestSuccessfulResultsAreRedacted(t *testing.T) {
	rd := redact.New(redact.Options{Secrets: []string{"configured-key-0123"}})
	f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{
			Text: "OPENAI_API_KEY=configured-key-0123\nother=sk-proj-Ab3dEf9hIjKlMnOpQrStUv",
			Meta: json.RawMessage(`{"url":"https://u:pw-in-url@example.com/","echo":"configured-key-0123"}`),
		}, nil
	}}
	rec := &recorder{}
	b := runRound(t, New(Config{Tools: tool.NewSet(f), Redact: rd.Redact, Events: rec}), calls("t", `{}`))
	r := b.Results[0]
	if r.Status != llm.ResultOK {
		t.Fatalf("status %s", r.Status)
	}
	for _, leak := range []string{"configured-key-0123", "sk-proj-", "pw-in-url"} {
		if strings.Contains(r.Content, leak) || strings.Contains(string(r.Meta), leak) {
			t.Errorf("%s kept: content %q, meta %s", leak, r.Content, r.Meta)
		}
	}
	if !json.Valid(r.Meta) || !strings.Contains(string(r.Meta), redact.Mask) {
		t.Errorf("meta %s: want valid JSON with the mask", r.Meta)
	}
	if ev := rec.of(event.Result); len(ev) != 1 || ev[0].Content != r.Content {
		t.Errorf("result event %+v does not carry the redacted content", ev)
	}
}

func TestEmptyOutputIsSaidSo(t *testing.T) {
	f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Meta: json.RawMessage(`{"k":1}`)}, nil
	}}
	b := runRound(t, New(Config{Tools: tool.NewSet(f)}), calls("t", `{}`))
	if r := b.Results[0]; r.Status != llm.ResultOK || r.Content != noOutputText || string(r.Meta) != `{"k":1}` {
		t.Errorf("got %+v", r)
	}
}

func TestEventsDescribeEachCall(t *testing.T) {
	rec := &recorder{}
	ro := &fake{spec: tool.Spec{Name: "ro", Access: tool.ReadOnly}}
	cs := calls("ro", `{"n":1}`, `{"n":2}`, `{"n":1}`)
	b := runRound(t, New(Config{Tools: tool.NewSet(ro), Events: rec}), cs)
	checkPairing(t, b, cs)
	started := rec.of(event.ToolStarted)
	if len(started) != 2 {
		t.Fatalf("%d tool_started events, want 2 (the duplicate does not start)", len(started))
	}
	for _, e := range started {
		if e.ThreadID != "th" || e.TurnID != "tu" || e.Round != 3 || e.Name != "ro" || e.Args != cs[e.Index].Args || e.CallID != cs[e.Index].ID {
			t.Errorf("tool_started %+v", e)
		}
	}
	results := rec.of(event.Result)
	if len(results) != 3 {
		t.Fatalf("%d result events, want 3", len(results))
	}
	for _, e := range results {
		if e.Status != string(b.Results[e.Index].Status) || e.Content != b.Results[e.Index].Content || e.Round != 3 {
			t.Errorf("result event %+v for %+v", e, b.Results[e.Index])
		}
		if e.Status == string(llm.ResultOK) && e.Duration <= 0 {
			t.Errorf("result event without duration: %+v", e)
		}
	}
}

func TestDeadlines(t *testing.T) {
	slow := func(name string, timeout time.Duration) *fake {
		return &fake{spec: tool.Spec{Name: name, Access: tool.ReadOnly, Timeout: timeout}, run: sleeper(time.Minute)}
	}
	tests := []struct {
		name string
		cfg  Config
		tool *fake
		want string
	}{
		{"the override wins", Config{Timeouts: map[string]time.Duration{"s": 40 * time.Millisecond}}, slow("s", time.Hour), "deadline of 40ms"},
		{"the tool's own deadline", Config{DefaultTimeout: time.Hour}, slow("s", 50*time.Millisecond), "deadline of 50ms"},
		{"the default deadline", Config{DefaultTimeout: 60 * time.Millisecond}, slow("s", 0), "deadline of 60ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Tools = tool.NewSet(tt.tool)
			b := runRound(t, New(tt.cfg), calls("s", `{}`))
			r := b.Results[0]
			if r.Status != llm.ResultError || !strings.Contains(r.Content, "did not finish within its "+tt.want) {
				t.Errorf("got %+v", r)
			}
		})
	}
}
