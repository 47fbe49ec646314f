package web_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/web"
)

// TestPageBenchmarks measures the page in headless Chromium for
// bench/RESULTS-web.md: the bytes of a first load, the time to render a
// thread of 2,000 items, and the long tasks (over 50 ms) while a
// 10,000-token answer streams, with what those tasks were on the
// Performance timeline. It runs when REIN_WEB_BENCH=1 (it takes minutes
// and its numbers depend on the machine's load):
//
//	REIN_WEB_BENCH=1 go test -count=1 -run TestPageBenchmarks -v ./web/
//
// REIN_WEB_OLD=DIR streams the answer also into the page whose files are
// in DIR (another version's web/static), alternating with this one's in
// the same browser, REIN_WEB_RUNS times each (default 3):
//
//	git show BASE:web/static/app.js > /tmp/old/app.js …
//	REIN_WEB_BENCH=1 REIN_WEB_OLD=/tmp/old REIN_WEB_RUNS=5 go test -count=1 -run TestPageBenchmarks/streaming -v ./web/
func TestPageBenchmarks(t *testing.T) {
	if os.Getenv("REIN_WEB_BENCH") == "" {
		t.Skip("set REIN_WEB_BENCH=1 to measure the page")
	}
	r := newRig(t)
	ctx, consoleErrors := browser(t, 1280, 860)

	// First load: every byte the browser received for the page and its
	// files (headers included), gzipped as served.
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	t.Run("firstLoad", func(t *testing.T) {
		bytes := eval[float64](t, ctx, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).reduce((n, e) => n + e.transferSize, 0)`)
		gz, plain := web.Size()
		t.Logf("first load: %.1f KB transferred (the files gzipped: %.1f KB; plain %.1f KB)", bytes/1024, float64(gz)/1024, float64(plain)/1024)
	})

	// A thread of 2,000 items (1,000 turns of a question and a markdown
	// answer), opened by reloading the page on it.
	t.Run("bigThread", func(t *testing.T) {
		th := session.Thread{ID: "thread_big", Created: time.Now(), Updated: time.Now(), Settings: session.ThreadConfig{Model: "script:none"}}
		if err := r.store.SaveThread(t.Context(), th); err != nil {
			t.Fatal(err)
		}
		answer := "Here is **the answer** with `code`, a list:\n\n- one\n- two\n\n```go\nfunc f() int { return 42 }\n```\n\nand a closing paragraph of a few words."
		for i := range 1000 {
			turn := fmt.Sprintf("turn_%04d", i)
			q := llm.UserText(fmt.Sprintf("Question number %d?", i))
			q.ID, q.TurnID = turn+".1", turn
			a := llm.Item{Role: llm.RoleAssistant, ID: turn + ".2", TurnID: turn, Parts: []llm.Part{{Kind: llm.PartText, Text: answer}}}
			for _, it := range []llm.Item{q, a} {
				if err := r.store.Record(t.Context(), th.ID, it); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.store.SaveTurn(t.Context(), session.Turn{ID: turn, ThreadID: th.ID, Status: record.StatusCompleted, StopReason: record.StopFinished, Usage: llm.Usage{InputTokens: 900, OutputTokens: 60}}); err != nil {
				t.Fatal(err)
			}
		}
		vs := variants()
		for i := range 3 {
			for k := range vs {
				v := vs[(i+k)%len(vs)] // alternate which goes first
				restore := func() {}
				if v.dir != "" {
					restore = web.ServeFrom(t, v.dir)
				}
				navigate(t, ctx, r.url+"/#thread="+th.ID, `document.body.dataset.thread === "thread_big"`)
				render := eval[float64](t, ctx, `+document.body.dataset.renderMs`)
				apply := eval[float64](t, ctx, `+document.body.dataset.applyMs`)
				total := eval[float64](t, ctx, `performance.now()`)
				items := eval[int](t, ctx, `document.querySelectorAll("#log .item").length`)
				restore()
				if items != 2000 {
					t.Fatalf("the big thread shows %d items, want 2000", items)
				}
				t.Logf("2,000-item thread, %s page: rendered in %.0f ms, %.0f ms of it building the DOM (from navigation to rendered: %.0f ms) (load %s)", v.name, render, apply, total, loadavg())
			}
		}
	})

	// A 10,000-token answer streaming: long tasks seen meanwhile, and
	// what they were on the timeline.
	t.Run("streaming", func(t *testing.T) {
		vs := variants()
		runs := 1
		if len(vs) > 1 {
			runs = 3
		}
		if n, err := strconv.Atoi(os.Getenv("REIN_WEB_RUNS")); err == nil && n > 0 {
			runs = n
		}
		// ≈ 10,000 tokens in paragraphs of about 100 words, as answers
		// come; and as one code block of 600 lines.
		prose := "# A long answer\n\n" + strings.Repeat(strings.Repeat("The answer streams on with ordinary words and some `code` now and then. ", 8)+"\n\n", 75)
		var code strings.Builder
		code.WriteString("Here is the file:\n\n```go\n")
		for i := range 600 {
			fmt.Fprintf(&code, "\tx%d := compute(%d, \"step\") // the %dth step of it\n", i, i, i)
		}
		code.WriteString("```\n")
		for _, answer := range []struct{ name, text string }{{"prose", prose}, {"code", code.String()}} {
			for i := range runs {
				for k := range vs {
					v := vs[(i+k)%len(vs)] // alternate which goes first
					restore := func() {}
					if v.dir != "" {
						restore = web.ServeFrom(t, v.dir)
					}
					res := streamLong(t, ctx, r, fmt.Sprintf("%s%d%s", answer.name, i, v.name), answer.text)
					restore()
					t.Logf("%s run %d %s (load %s): %s", answer.name, i+1, v.name, res.load, res)
				}
			}
		}
	})
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// variant is a version of the page: this one, or the one whose files are
// in dir.
type variant struct{ name, dir string }

// variants are this page and, with REIN_WEB_OLD, the one it names.
func variants() []variant {
	vs := []variant{{"this", ""}}
	if dir := os.Getenv("REIN_WEB_OLD"); dir != "" {
		vs = append(vs, variant{"old", dir})
	}
	return vs
}

// navigate loads url afresh in the tab and waits for ready; a load that
// the browser cut short (its context gone under the wait) is tried again.
func navigate(t *testing.T, ctx context.Context, url, ready string) {
	t.Helper()
	var err error
	for range 3 {
		c, cancel := context.WithTimeout(ctx, 90*time.Second)
		err = chromedp.Do(c, chromedp.Navigate("about:blank"), chromedp.Navigate(url), until(ready))
		cancel()
		if err == nil {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("open %s: %v", url, err)
}

// streamResult is what streamLong saw.
type streamResult struct {
	deltas int
	long   []float64 // the longtask entries over 50 ms, ms
	tasks  []longTask
	total  map[string]float64 // the long tasks' time by event, ms
	frames map[string][2]float64
	growth map[string][4]float64
	dirty  [4]float64
	styled [4]float64
	load   string
}

func (s streamResult) String() string {
	worst := 0.0
	for _, d := range s.long {
		worst = max(worst, d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d deltas, %d long tasks over 50 ms, the longest %.0f ms", s.deltas, len(s.long), worst)
	f := s.frames
	fmt.Fprintf(&b, "; whole stream: Layout %.0f ms in %.0f, UpdateLayoutTree %.0f ms, PrePaint %.0f ms, Paint %.0f ms in %.0f, FunctionCall %.0f ms",
		f["Layout"][0], f["Layout"][1], f["UpdateLayoutTree"][0], f["PrePaint"][0], f["Paint"][0], f["Paint"][1], f["FunctionCall"][0])
	q := func(v [4]float64, unit string) string {
		return fmt.Sprintf("%.2f/%.2f/%.2f/%.2f%s", v[0], v[1], v[2], v[3], unit)
	}
	fmt.Fprintf(&b, "; by quarter of the stream: Layout %s (dirty objects %s), UpdateLayoutTree %s (elements %s), PrePaint %s, Paint %s",
		q(s.growth["Layout"], " ms"), q(s.dirty, ""), q(s.growth["UpdateLayoutTree"], " ms"), q(s.styled, ""), q(s.growth["PrePaint"], " ms"), q(s.growth["Paint"], " ms"))
	for i, lt := range s.tasks {
		if i == 6 {
			fmt.Fprintf(&b, "; …")
			break
		}
		fmt.Fprintf(&b, "; task %s", lt)
	}
	return b.String()
}

// streamLong opens the page afresh, starts a thread on a scripted model
// that streams words (≈ 44 KB: 2,709 deltas of 16 bytes) and records the
// long tasks and the timeline until the turn completes.
func streamLong(t *testing.T, ctx context.Context, r *rig, name, words string) streamResult {
	t.Helper()
	r.script(name, scripted.Script{Rounds: []scripted.Round{{Text: words, Chunk: 16, Delay: 2 * time.Millisecond}}})
	navigate(t, ctx, r.url+"/", `document.body.dataset.conn === "open"`)
	do(t, ctx, "a new thread",
		chromedp.Click(css("#new-thread")),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:"+name),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`),
		ignore(chromedp.Evaluate[bool](`window.__long = []; new PerformanceObserver(l => { for (const e of l.getEntries()) window.__long.push(e.duration) }).observe({type: "longtask"}); true`)))
	load := loadavg()
	stop := recordTimeline(t, ctx)
	do(t, ctx, "stream", chromedp.SendKeys(css("#input"), "Write at length"+kb.Enter),
		until(`!!document.querySelector(".turn-foot[data-status=completed]")`))
	evs := stop()
	res := streamResult{deltas: len(words) / 16, load: load + "–" + loadavg()}
	res.long = eval[[]float64](t, ctx, `window.__long.filter(d => d > 50)`)
	res.tasks, res.total = longTasks(evs, 50)
	res.frames = sumByName(evs, "Layout", "UpdateLayoutTree", "PrePaint", "Paint", "FunctionCall")
	res.growth = growth(evs, "Layout", "UpdateLayoutTree", "PrePaint", "Paint")
	res.dirty, res.styled = counts(evs)
	if got := eval[int](t, ctx, `document.querySelector(".item.agent .md").textContent.length`); got < len(words)*8/10 {
		t.Errorf("the streamed answer shows %d characters, want about %d", got, len(words))
	}
	return res
}

// loadavg is the machine's load over the last minute (the numbers here
// depend on it).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// ignore makes a step of an action whose value is not needed.
func ignore[T any](a chromedp.Action[T]) step {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
