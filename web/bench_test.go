package web_test

import (
	"context"
	"fmt"
	"os"
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
// bench/RESULTS.md: the bytes of a first load, the time to render a thread
// of 2,000 items, and the long tasks (over 50 ms) while a 10,000-token
// answer streams. It runs when REIN_WEB_BENCH=1 (it takes a minute and its
// numbers depend on the machine's load):
//
//	REIN_WEB_BENCH=1 go test -count=1 -run TestPageBenchmarks -v ./web/
func TestPageBenchmarks(t *testing.T) {
	if os.Getenv("REIN_WEB_BENCH") == "" {
		t.Skip("set REIN_WEB_BENCH=1 to measure the page")
	}
	r := newRig(t)
	ctx, consoleErrors := browser(t, 1280, 860)

	// First load: every byte the browser received for the page and its
	// files (headers included), gzipped as served.
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	bytes := eval[float64](t, ctx, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).reduce((n, e) => n + e.transferSize, 0)`)
	gz, plain := web.Size()
	t.Logf("first load: %.1f KB transferred (the files gzipped: %.1f KB; plain %.1f KB)", bytes/1024, float64(gz)/1024, float64(plain)/1024)

	// A thread of 2,000 items (1,000 turns of a question and a markdown
	// answer), opened by reloading the page on it.
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
	for range 3 {
		do(t, ctx, "open the big thread", chromedp.Navigate("about:blank"), chromedp.Navigate(r.url+"/#thread="+th.ID), until(`document.body.dataset.thread === "thread_big"`))
		render := eval[float64](t, ctx, `+document.body.dataset.renderMs`)
		apply := eval[float64](t, ctx, `+document.body.dataset.applyMs`)
		total := eval[float64](t, ctx, `performance.now()`)
		items := eval[int](t, ctx, `document.querySelectorAll("#log .item").length`)
		if items != 2000 {
			t.Fatalf("the big thread shows %d items, want 2000", items)
		}
		t.Logf("2,000-item thread: rendered in %.0f ms, %.0f ms of it building the DOM (from navigation to rendered: %.0f ms)", render, apply, total)
	}

	// A 10,000-token answer streaming: long tasks seen meanwhile.
	// ≈ 10,000 tokens in paragraphs of about 100 words, as answers come.
	words := strings.Repeat(strings.Repeat("The answer streams on with ordinary words and some `code` now and then. ", 8)+"\n\n", 75)
	r.script("long", scripted.Script{Rounds: []scripted.Round{{Text: "# A long answer\n\n" + words, Chunk: 16, Delay: 2 * time.Millisecond}}})
	do(t, ctx, "new thread",
		chromedp.Click(css("#new-thread")),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:long"),
		chromedp.Click(css("#new-ok")),
		until(`document.body.dataset.thread !== "thread_big" && !document.getElementById("input").disabled`),
		ignore(chromedp.Evaluate[bool](`window.__long = []; new PerformanceObserver(l => { for (const e of l.getEntries()) window.__long.push(e.duration) }).observe({type: "longtask"}); true`)),
		chromedp.SendKeys(css("#input"), "Write at length"+kb.Enter),
		until(`!!document.querySelector(".turn-foot[data-status=completed]")`),
	)
	long := eval[[]float64](t, ctx, `window.__long.filter(d => d > 50)`)
	worst := 0.0
	for _, d := range long {
		worst = max(worst, d)
	}
	n := len(words) / 16
	t.Logf("10,000-token answer in %d deltas: %d long tasks over 50 ms, the longest %.0f ms", n, len(long), worst)
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// ignore makes a step of an action whose value is not needed.
func ignore[T any](a chromedp.Action[T]) step {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
