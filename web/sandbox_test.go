package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
)

// TestTheTraceFrameIsSandboxed: the turn's trace is shown in a frame
// sandboxed to scripts alone (an opaque origin): its own script runs and
// draws the timeline, but it cannot reach the page (no DOM either way)
// nor open the server's WebSocket.
func TestTheTraceFrameIsSandboxed(t *testing.T) {
	r := newRig(t)
	r.script("web", scripted.Script{Rounds: []scripted.Round{{Text: "Done."}}})
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	do(t, ctx, "a turn",
		chromedp.Click(css("#new-thread")),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:web"),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`),
		chromedp.SendKeys(css("#input"), "Hello"+kb.Enter),
		until(`!!document.querySelector('.turn-foot[data-status=completed] .trace-btn')`),
		chromedp.Click(css(`.turn-foot[data-status=completed] .trace-btn`)),
		until(`document.getElementById("trace-dialog").open`))
	if got := eval[string](t, ctx, `document.getElementById("trace-frame").getAttribute("sandbox")`); got != "allow-scripts" {
		t.Errorf("the trace frame's sandbox = %q, want allow-scripts alone", got)
	}
	// In the frame: its own script ran and drew the timeline; it cannot
	// reach the page, and the server refuses its WebSocket (its origin is
	// opaque: "null", and the session cookie is not sent).
	frames, err := chromedp.Run(ctx, chromedp.Nodes(css(`#trace-frame`)))
	if err != nil || len(frames) != 1 {
		t.Fatalf("the trace frame: %v %v", frames, err)
	}
	// An isolated world of the frame: the frame's origin and document,
	// not the page's. Its expressions are awaited.
	world, err := chromedp.Run(ctx, chromedp.Action[runtime.ExecutionContextID](func(ctx context.Context, tg *chromedp.Target) (runtime.ExecutionContextID, error) {
		w, err := cdp.Call(ctx, tg, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frames[0].FrameID, WorldName: "test"})
		return w.ExecutionContextID, err
	}))
	if err != nil {
		t.Fatalf("a world in the trace frame: %v", err)
	}
	inFrame := func(what, expr string) string {
		t.Helper()
		yes := true
		res, err := chromedp.Run(ctx, chromedp.Action[*runtime.EvaluateResult](func(ctx context.Context, tg *chromedp.Target) (*runtime.EvaluateResult, error) {
			r, err := cdp.Call(ctx, tg, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ContextID: world, AwaitPromise: &yes, ReturnByValue: &yes})
			return &r, err
		}))
		if err != nil || res.ExceptionDetails != nil || res.Result == nil {
			t.Fatalf("%s: %v %+v", what, err, res)
		}
		var v any
		if err := json.Unmarshal([]byte(res.Result.Value), &v); err != nil {
			t.Fatalf("%s: %s: %v", what, res.Result.Value, err)
		}
		return fmt.Sprint(v)
	}
	// The trace's own script ran in the frame (its marker, set last).
	deadline := time.Now().Add(60 * time.Second)
	for inFrame("the trace's script", `document.body.dataset.ok || ""`) != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the trace's script did not run in the sandboxed frame")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := inFrame("the timeline", `document.body.dataset.bars`); got == "" || got == "0" {
		t.Errorf("the trace drew %q bars in the sandboxed frame, want some", got)
	}
	if got := inFrame("the page from the frame", `(() => { try { return "reached " + parent.document.title; } catch (e) { return "blocked " + e.name; } })()`); !strings.HasPrefix(got, "blocked") {
		t.Errorf("the frame reached the page: %q", got)
	}
	if got := inFrame("origin", `self.origin`); got != "null" {
		t.Errorf("the frame's origin is %q, want null (opaque)", got)
	}
	if got := inFrame("the WebSocket", fmt.Sprintf(`new Promise(res => { try { const ws = new WebSocket("ws://%s/", ["rein.v1"]); ws.onopen = () => { ws.close(); res("open"); }; ws.onerror = () => res("refused"); } catch (e) { res("refused " + e.name); } })`, r.addr)); !strings.HasPrefix(got, "refused") {
		t.Errorf("a WebSocket from the trace frame: %q, want refused", got)
	}
	shot(t, ctx, "trace-sandboxed")
	// The page cannot reach into the frame, nor the frame into the page.
	if got := eval[string](t, ctx, `(() => { const f = document.getElementById("trace-frame"); try { return String(f.contentDocument) + " " + String(f.contentWindow.document); } catch (e) { return "blocked " + e.name; } })()`); !strings.HasPrefix(got, "null") && !strings.HasPrefix(got, "blocked") {
		t.Errorf("the page reached the frame's document: %q", got)
	}
	// The one error expected: the frame's WebSocket, refused (403).
	errs := slices.DeleteFunc(consoleErrors(), func(e string) bool { return strings.Contains(e, "Unexpected response code: 403") })
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestStreamedMarkdownMatchesWholeMarkdown: md.js's render, fed an answer
// a few bytes at a time as it streams (re-splitting only from the last
// block), builds the same DOM as rendering the whole answer at once,
// fences, lists, tables and quotes cut at every point included.
func TestStreamedMarkdownMatchesWholeMarkdown(t *testing.T) {
	r := newRig(t)
	ctx, _ := browser(t, 800, 600)
	do(t, ctx, "page", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	text := "# Title\n\nA paragraph with `code` and **bold**.\nSecond line.\n\n```go\nfunc main() {\n\n\tfmt.Println(\"x\")\n}\n```\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n> more\n\n````\n```nested```\n````\n\n" +
		"```js\nconst a = 1; /* a comment\nover lines */ let s = `a template\nover lines`;\n// don't\nx = \"q\" + '/*' + 2.5; `\n/* open\nstill */ y\n```\n\n" +
		"```python\n# hash comment\ns = 'it''s' # more\n```\n\n```\nplain\ntext `\n```\n\n" +
		"1. first\n2. second with **bold**\n   and more\n3. third\n\nA long\nparagraph with *italic*\nover lines\n\n| x | y |\n|---|---|\n| 1 | 2 |\n| 3 | `4` |\n\nThe end.\n"
	for _, chunk := range []int{1, 3, 7, 16} {
		got := eval[string](t, ctx, fmt.Sprintf(`import("/assets/md.js").then(({render}) => {
			const text = %s, whole = document.createElement("div"), streamed = document.createElement("div");
			render(whole, text);
			for (let i = %d; i < text.length + %d; i += %d) render(streamed, text.slice(0, i));
			return streamed.innerHTML === whole.innerHTML ? "same" : streamed.innerHTML + "\n---\n" + whole.innerHTML;
		})`, strconv.Quote(text), chunk, chunk, chunk), chromedp.EvalAwaitPromise)
		if got != "same" {
			t.Errorf("streamed %d bytes at a time, the DOM differs from the whole render:\n%s", chunk, got)
		}
	}
}

// TestANamedTokenSignsInOnThePageAndSeesItsOwnThreads: a teammate with a
// named token signs in with the page's form and sees only the threads
// that token created, in the list and in a search; another's thread,
// opened by its address, is not there.
func TestANamedTokenSignsInOnThePageAndSeesItsOwnThreads(t *testing.T) {
	const alice = "alice-page-0123456789"
	r := newRigWith(t, func(c *server.Config) {
		c.NamedTokens = []server.NamedToken{{Name: "alice", Token: alice}, {Name: "bob", Token: "bob-page-0123456789"}}
	})
	now := time.Now()
	for _, th := range []session.Thread{
		{ID: "thread_alice", Title: "Alice's release plan", Owner: "alice", Created: now, Updated: now},
		{ID: "thread_bob", Title: "Bob's release plan", Owner: "bob", Created: now, Updated: now},
	} {
		if err := r.store.SaveThread(t.Context(), th); err != nil {
			t.Fatal(err)
		}
	}
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "the sign-in form", chromedp.Navigate(r.url+"/"), until(`!document.getElementById("signin").hidden`))
	do(t, ctx, "sign in with alice's token", chromedp.SendKeys(css(`#signin input[name=token]`), alice+kb.Enter))
	time.Sleep(time.Second) // the form posts and the page loads again
	do(t, ctx, "signed in as alice",
		until(`document.body.dataset.conn === "open" && !!document.querySelector('#threads [data-thread=thread_alice]')`))
	if n := eval[int](t, ctx, `document.querySelectorAll('#threads [data-thread=thread_bob]').length`); n != 0 {
		t.Errorf("alice's page lists bob's thread")
	}
	do(t, ctx, "search", chromedp.SendKeys(css("#search"), "release plan"),
		until(`document.querySelectorAll('#threads [data-thread]').length === 1 && !!document.querySelector('#threads [data-thread=thread_alice]')`))
	do(t, ctx, "bob's thread by its address", chromedp.Navigate(r.url+"/#thread=thread_bob"), chromedp.Reload())
	do(t, ctx, "not found",
		until(`document.body.dataset.conn === "open" && (document.getElementById("toast")||{}).textContent?.includes("no such thread")`))
	if got := eval[string](t, ctx, `document.getElementById("log").textContent`); strings.Contains(got, "Bob's") {
		t.Errorf("alice's page shows bob's thread: %q", got)
	}
	// The one error expected: the page's first WebSocket, before signing
	// in, refused (401).
	if errs := slices.DeleteFunc(consoleErrors(), func(e string) bool { return strings.Contains(e, "HTTP Authentication failed") }); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
