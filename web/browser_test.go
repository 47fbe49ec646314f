package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/askuser"
	"github.com/reinhq/rein/tools/fs"
	"github.com/reinhq/rein/undo"
	"github.com/reinhq/rein/window"
)

// traces keeps the runtime's trace events in memory: the session's
// TraceStore and the server's TraceReader.
type traces struct {
	mu sync.Mutex
	m  map[string][]json.RawMessage
}

func (tr *traces) AppendTrace(_ context.Context, thread, _ string, evs []json.RawMessage) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.m == nil {
		tr.m = map[string][]json.RawMessage{}
	}
	tr.m[thread] = append(tr.m[thread], evs...)
	return nil
}

func (tr *traces) Trace(_ context.Context, thread string) ([]json.RawMessage, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.m[thread], nil
}

// rig is rein serve in a test: a scheduler whose threads play the scripted
// model their model names ("script:NAME"), with edit_file on a temporary
// workspace (asked for approval: the untrusted policy) and ask_user.
type rig struct {
	t       *testing.T
	dir     string
	store   *session.MemStore
	sched   *session.Scheduler
	srv     *server.Server
	url     string
	addr    net.Addr
	hs      *httptest.Server
	proxy   *proxy
	mu      sync.Mutex
	scripts map[string]*scripted.Model
}

const token = "secret-token"

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, nil)
}

// newRigWith is newRig with the server's config changed by edit first.
func newRigWith(t *testing.T, edit func(*server.Config)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), store: session.NewMemStore(), scripts: map[string]*scripted.Model{}}
	ws, err := sandbox.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := &traces{}
	// File edits are tracked for undo, as rein serve's are.
	j := &journal{}
	track := undo.NewTracker(ws, j)
	r.sched, err = session.New(session.Config{Store: r.store, Traces: tr, Setup: func(_ context.Context, th session.Thread) (loop.Options, func(), error) {
		r.mu.Lock()
		m, ok := r.scripts[th.Settings.Model]
		r.mu.Unlock()
		if !ok {
			return loop.Options{}, nil, fmt.Errorf("no script %q", th.Settings.Model)
		}
		w, err := window.New(window.Config{Model: "gpt-4o", Window: 128_000, MaxOutput: 4_000})
		if err != nil {
			return loop.Options{}, nil, err
		}
		return loop.Options{Model: m, Tools: tool.NewSet(track.Wrap(fs.EditFile(ws)), askuser.New()), Policy: tool.PolicyUntrusted,
			Window: w, Grace: 100 * time.Millisecond}, nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defaults := &protocol.ThreadDefaults{Workspace: r.dir, Approval: "untrusted", Sandbox: "workspace-write", Models: []string{"script:web", "script:long"}}
	undoer := server.UndoFunc(func(ctx context.Context, thread, turn string, force bool) (*undo.Result, error) {
		return undo.Restore(ctx, ws, j, thread, undo.Options{Turn: turn, Force: force})
	})
	sc := server.Config{Sessions: r.sched, Traces: tr, Defaults: defaults, Undo: undoer, CheckThread: func(c session.ThreadConfig) error {
		if !strings.HasPrefix(c.Model, "script:") {
			return fmt.Errorf("model %q: the tests know only scripted models", c.Model)
		}
		return nil
	}}
	if edit != nil {
		edit(&sc)
	}
	r.srv, err = server.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(r.srv.Handler(token))
	r.hs = hs
	r.proxy = newProxy(t, hs.Listener.Addr().String())
	r.url, r.addr = "http://"+r.proxy.ln.Addr().String(), r.proxy.ln.Addr()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.sched.Close(ctx)
	})
	return r
}

// proxy forwards TCP connections to the server, so that a test can cut
// them all (a lost network), the WebSockets included, which the HTTP
// server no longer tracks once upgraded.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.drop(); p.wg.Wait() })
	return p
}

// drop cuts every connection open through the proxy.
func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (r *rig) script(name string, s scripted.Script) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts["script:"+name] = scripted.New(s)
}

// browser starts headless Chromium, or skips the test when there is none.
// It returns a tab's context and the console errors and exceptions seen so
// far.
func browser(t *testing.T, width, height int) (context.Context, func() []string) {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium); the page is not driven")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-dev-shm-usage", true),
		// Sandboxed frames in the page's process, where the DevTools
		// protocol of the page's target can evaluate in them
		// (TestTheTraceFrameIsSandboxed); their origin is opaque either way.
		chromedp.Flag("disable-features", "IsolateSandboxedIframes"),
		chromedp.WindowSize(width, height))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancelC(); <-done })
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// step is an action of the tab that returns nothing.
type step = chromedp.Action[chromedp.Void]

// do runs steps in the tab with a generous deadline (the machine is
// shared), failing the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...step) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript expression to be true.
func until(expr string) step {
	p := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(30*time.Millisecond), chromedp.WithPollingTimeout(80*time.Second))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := p(ctx, t)
		return chromedp.Void{}, err
	}
}

// css is a CSS selector.
type css = chromedp.CSS

// shot saves a screenshot under REIN_WEB_SHOTS, when it is set (the
// README's screenshots are made so).
func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("REIN_WEB_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// conversation is the scripted model of the browser test: an edit to
// approve, a question, an answer that streams, and, after the user steers,
// a long answer that is interrupted.
func conversation() scripted.Script {
	usage := llm.Usage{InputTokens: 1200, OutputTokens: 90}
	answer := "The greeting is fixed.\n\n## What changed\n\n- `hello.txt` now says **Hello, world**\n- nothing else\n\n```go\nfunc main() {\n\tfmt.Println(\"Hello, world\") // greet\n}\n```\n\n" +
		"Hostile text stays text: <img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script> [click](javascript:window.__pwned=1)\n\n" +
		repeat("Streaming goes on, word by word, so that the page shows it as it comes. ", 8)
	long := "Also, tests:\n\n" + repeat("A test for the greeting reads the file and compares it with the expected text. ", 60)
	return scripted.Script{Chunk: 6, Delay: 25 * time.Millisecond, Rounds: []scripted.Round{
		{Text: "I'll fix the greeting in `hello.txt`.", Usage: usage, Calls: []scripted.Call{{Name: "edit_file",
			Args: map[string]any{"path": "hello.txt", "old_string": "Hello, wrld\n", "new_string": "Hello, world\n"}}}},
		{Text: "Done. One question first:", Usage: usage, Calls: []scripted.Call{{Name: "ask_user", Args: map[string]any{
			"intro": "Before I go on",
			"questions": []map[string]any{{"prompt": "Which language should the greeting use?", "header": "Language",
				"options": []map[string]any{{"label": "English", "description": "Hello, world"}, {"label": "French", "description": "Bonjour"}}}}}}}},
		{Thinking: "The user chose a language; summarise the change.", Text: answer, Usage: usage, Delay: 30 * time.Millisecond, Hold: 3 * time.Second},
		{Text: long, Usage: usage, Chunk: 4, Delay: 40 * time.Millisecond},
		{Text: "Summary: the greeting is fixed.", Usage: usage},
	}}
}

// TestThePageRunsATurnInChromium drives the page in headless Chromium
// against a scripted model: sign in with the one-time URL, start a thread,
// watch the answer stream, approve a diffed edit, answer ask_user, steer,
// reload mid-turn and see the turn go on, a second tab and a lost
// connection, queue with Alt+Enter, interrupt with Esc, open the trace; the
// console stays free of errors throughout.
func TestThePageRunsATurnInChromium(t *testing.T) {
	r := newRig(t)
	if err := os.WriteFile(filepath.Join(r.dir, "hello.txt"), []byte("Hello, wrld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.script("web", conversation())
	ctx, consoleErrors := browser(t, 1280, 860)

	// Signing in: the one-time URL sets the cookie and lands on the page.
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	if path := eval[string](t, ctx, `location.pathname + location.search`); path != "/" {
		t.Errorf("after signing in the page is at %q, want / (the code out of the address bar)", path)
	}

	// A thread, and a message sent with Enter.
	do(t, ctx, "new thread",
		chromedp.Click(css("#new-thread")),
		// The dialog offers the server's defaults and models (initialize).
		until(fmt.Sprintf(`document.querySelector("#new-form input[name=workspace]").placeholder === "the server's: %s" && [...document.querySelectorAll("#models option")].map(o => o.value).join() === "script:web,script:long"`, r.dir)),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:web"),
		chromedp.SetValue(css(`#new-form select[name=approval]`), "untrusted"),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`),
		chromedp.SendKeys(css("#input"), "Fix the greeting"+kb.Enter),
		until(`!!document.querySelector(".item.user .bubble")`),
	)

	// The approval shows the edit as a diff; approve it.
	do(t, ctx, "approval", until(`(document.querySelector('#pending [data-pause=approval] .diff .del + .add')||{}).textContent === "+Hello, world"`))
	shot(t, ctx, "approval")
	// A reload while the turn waits brings the approval back (thread/read's
	// pause).
	do(t, ctx, "reload at the approval", chromedp.Reload(), until(`document.body.dataset.conn === "open" && !!document.body.dataset.thread`),
		until(`(document.querySelector('#pending [data-pause=approval] .diff .del + .add')||{}).textContent === "+Hello, world"`))
	// Side by side: the old line on the left, the new on the right.
	do(t, ctx, "side by side", chromedp.Click(css(`#pending .diffwrap button[aria-pressed]`)),
		until(`(document.querySelector('#pending .diff.split .del + .add')||{}).textContent === "Hello, world" && document.querySelector('#pending .diff.split .del').textContent === "Hello, wrld"`))
	do(t, ctx, "approve", chromedp.Click(css(`#pending button[data-decision=approve]`)),
		until(`(document.querySelector('.tool[data-status]')||{}).dataset?.status === "ok"`))
	if b, err := os.ReadFile(filepath.Join(r.dir, "hello.txt")); err != nil || string(b) != "Hello, world\n" {
		t.Errorf("hello.txt after the approved edit: %q %v", b, err)
	}

	// The question: pick an option and answer.
	do(t, ctx, "ask_user", until(`!!document.querySelector('#pending [data-pause=question] input[type=radio]')`))
	shot(t, ctx, "question")
	do(t, ctx, "answer", chromedp.Click(css(`#pending input[type=radio]`)), chromedp.Click(css(`#pending button[type=submit]`)),
		until(`!document.querySelector('#pending .card')`))

	// The answer streams: seen in progress, and growing.
	const streamed = `(document.querySelector('.item.agent.streaming .md')||{textContent:""}).textContent.length`
	do(t, ctx, "streaming", until(streamed+` > 20`))
	first := eval[int](t, ctx, streamed)
	do(t, ctx, "streaming goes on", until(fmt.Sprintf(`%s > %d`, streamed, first+30)))
	do(t, ctx, "steer", chromedp.SendKeys(css("#input"), "Mention tests too"+kb.Enter),
		until(`!!document.querySelector('.item.user.steer')`),
		until(`[...document.querySelectorAll('.item.agent .md')].some(e => e.textContent.includes("Hello, world") && e.querySelector("pre code .tok-k"))`),
	)

	// What the model wrote as markup is shown as text: no element, no
	// script run, no javascript: link.
	if got := eval[string](t, ctx, `String(window.__pwned) + " " + document.querySelectorAll("#log img, #log script, #log a[href^=javascript]").length + " " +
		[...document.querySelectorAll(".item.agent .md")].some(e => e.textContent.includes('<img src=x onerror=') && e.textContent.includes('<script>'))`); got != "undefined 0 true" {
		t.Errorf("hostile model text: pwned, elements, shown as text = %q, want \"undefined 0 true\"", got)
	}

	// The long answer after the steer: reload in the middle of it.
	do(t, ctx, "second answer streams", until(`(document.querySelector('.item.agent.streaming .md')||{textContent:""}).textContent.includes("Also, tests")`))
	do(t, ctx, "reload", chromedp.Reload(), until(`document.body.dataset.conn === "open" && !!document.body.dataset.thread`))
	do(t, ctx, "history after the reload", until(`!!document.querySelector('.item.user.steer') && document.querySelector('.tool').dataset.status === "ok"`))
	do(t, ctx, "the turn goes on after the reload", until(streamed+` > 10`))
	first = eval[int](t, ctx, streamed)
	do(t, ctx, "streaming goes on after the reload", until(fmt.Sprintf(`%s > %d`, streamed, first+20)))

	// A second tab on the thread sees the same turn stream.
	tab, closeTab := chromedp.NewContext(ctx)
	if err := chromedp.Do(tab); err != nil { // opens the tab for its context's life, not a step's
		t.Fatal(err)
	}
	id := eval[string](t, ctx, `document.body.dataset.thread`)
	do(t, tab, "second tab", chromedp.Navigate(r.url+"/#thread="+id), until(streamed+` > 10`))
	first = eval[int](t, tab, streamed)
	do(t, tab, "second tab streams", until(fmt.Sprintf(`%s > %d`, streamed, first+20)))
	closeTab()

	// A lost connection is shown, retried, and the turn streams on.
	r.proxy.drop()
	do(t, ctx, "connection lost", until(`document.body.dataset.conn === "closed" && document.getElementById("conn").textContent.includes("retrying")`))
	do(t, ctx, "reconnected", until(`document.body.dataset.conn === "open"`), until(streamed+` > 10`))
	first = eval[int](t, ctx, streamed)
	do(t, ctx, "streams on after reconnecting", until(fmt.Sprintf(`%s > %d`, streamed, first+20)))

	// Alt+Enter queues the next turn.
	do(t, ctx, "queue", chromedp.SendKeys(css("#input"), "Then summarise"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierAlt)),
		until(`!!document.querySelector('.turn-foot[data-status=queued]')`))

	// Esc interrupts; the queued turn runs next.
	do(t, ctx, "interrupt", chromedp.KeyEvent(kb.Escape), until(`!!document.querySelector('.turn-foot[data-status=interrupted]')`),
		until(`[...document.querySelectorAll('.turn-foot[data-status=completed]')].length === 1 && document.querySelector('.turn:last-child .item.agent .md').textContent === "Summary: the greeting is fixed."`))
	shot(t, ctx, "thread")

	// The trace opens inline.
	do(t, ctx, "trace", chromedp.Click(css(`.turn-foot[data-status=interrupted] .trace-btn`)),
		until(`document.getElementById("trace-dialog").open`))
	srcdoc := eval[string](t, ctx, `document.getElementById("trace-frame").srcdoc`)
	if !strings.Contains(srcdoc, "timeline") || !strings.Contains(srcdoc, "edit_file") {
		t.Errorf("the trace frame does not hold the turn's trace: %.300q", srcdoc)
	}
	// The frame is sandboxed (an opaque origin): the page cannot look in;
	// TestTheTraceFrameIsSandboxed checks from inside that the trace's
	// script ran.
	do(t, ctx, "trace sandboxed", until(`document.getElementById("trace-frame").getAttribute("sandbox") === "allow-scripts" && document.getElementById("trace-frame").contentDocument === null`))
	shot(t, ctx, "trace")
	do(t, ctx, "close trace", chromedp.Click(css("#trace-close")))

	// Dark, and a phone's width.
	if os.Getenv("REIN_WEB_SHOTS") != "" {
		do(t, ctx, "dark", chromedp.Click(css("#theme")))
		shot(t, ctx, "dark")
		do(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Reload(),
			until(`document.body.dataset.conn === "open" && !!document.body.dataset.thread && innerWidth === 390`))
		shot(t, ctx, "phone")
	}

	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestACrossSitePageCannotOpenTheWebSocket: on loopback without a token,
// the Origin check is all that keeps another site's page, in the user's
// browser, from driving the agent. A page of another origin cannot open
// the WebSocket; the server's own page, in the same browser, can.
func TestACrossSitePageCannotOpenTheWebSocket(t *testing.T) {
	r := newRig(t)
	open := httptest.NewServer(r.srv.Handler(""))
	defer func() { open.CloseClientConnections(); open.Close() }()
	port := open.URL[strings.LastIndexByte(open.URL, ':')+1:]
	ctx, _ := browser(t, 800, 600)

	try := fmt.Sprintf(`new Promise(res => {
		const ws = new WebSocket("ws://127.0.0.1:%s/", ["rein.v1"]);
		ws.onopen = () => { ws.close(); res("open"); };
		ws.onerror = () => res("refused");
	})`, port)

	// Another origin: a page served under another name and port.
	evil := httptest.NewServer(http.NotFoundHandler())
	defer evil.Close()
	other := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	do(t, ctx, "cross-site page", chromedp.Navigate(other+"/"))
	if got := eval[string](t, ctx, try, chromedp.EvalAwaitPromise); got != "refused" {
		t.Errorf("a page of %s opening the WebSocket: %s, want refused", other, got)
	}

	// The server's own page connects.
	do(t, ctx, "own page", chromedp.Navigate(open.URL+"/"), until(`document.body.dataset.conn === "open"`))
	if got := eval[string](t, ctx, try, chromedp.EvalAwaitPromise); got != "open" {
		t.Errorf("the server's own page opening the WebSocket: %s, want open", got)
	}
}

// TestThePageSearchesThreadsOnTheServer: the search box asks the server
// (thread/list's query), so it finds a thread the page never loaded, by
// its title in any case; clearing it shows the loaded list again.
func TestThePageSearchesThreadsOnTheServer(t *testing.T) {
	r := newRig(t)
	ctx, consoleErrors := browser(t, 1280, 860)
	now := time.Now()
	save := func(id, title string) {
		t.Helper()
		if err := r.store.SaveThread(t.Context(), session.Thread{ID: id, Title: title, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
	}
	save("thread_docs", "Write the docs")
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`),
		until(`!!document.querySelector('#threads [data-thread=thread_docs]')`))
	// Saved after the page listed the threads: only the server knows it.
	save("thread_parser", "Refactor the PARSER, 100% of it")
	do(t, ctx, "search", chromedp.SendKeys(css("#search"), "parser"),
		until(`!!document.querySelector('#threads [data-thread=thread_parser]') && !document.querySelector('#threads [data-thread=thread_docs]')`))
	clear := func() { eval[string](t, ctx, `document.getElementById("search").value = ""`) }
	clear()
	do(t, ctx, "search with a LIKE wildcard", chromedp.SendKeys(css("#search"), "0%"),
		until(`document.querySelectorAll('#threads [data-thread]').length === 1 && !!document.querySelector('#threads [data-thread=thread_parser]')`))
	clear()
	do(t, ctx, "clear", chromedp.SendKeys(css("#search"), " "+kb.Backspace),
		until(`!!document.querySelector('#threads [data-thread=thread_docs]')`))
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestThePageUndoesATurnsEdits: a turn that edited a file shows an undo
// button; a file changed since is not overwritten silently (the page
// lists it and asks), and undoing anyway puts the turn's file back.
func TestThePageUndoesATurnsEdits(t *testing.T) {
	r := newRig(t)
	file := filepath.Join(r.dir, "hello.txt")
	if err := os.WriteFile(file, []byte("Hello, wrld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.script("web", scripted.Script{Rounds: []scripted.Round{
		{Text: "Fixing.", Calls: []scripted.Call{{Name: "edit_file", Args: map[string]any{"path": "hello.txt", "old_string": "Hello, wrld\n", "new_string": "Hello, world\n"}}}},
		{Text: "Fixed."},
	}})
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	do(t, ctx, "a turn that edits",
		chromedp.Click(css("#new-thread")),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:web"),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`),
		chromedp.SendKeys(css("#input"), "Fix the greeting"+kb.Enter),
		until(`!!document.querySelector('#pending button[data-decision=approve]')`),
		chromedp.Click(css(`#pending button[data-decision=approve]`)),
		until(`!!document.querySelector('.turn-foot[data-status=completed] .undo-btn')`))
	if b, _ := os.ReadFile(file); string(b) != "Hello, world\n" {
		t.Fatalf("hello.txt after the edit: %q", b)
	}
	// The user changes the file after the turn: undo asks first.
	if err := os.WriteFile(file, []byte("Hello, everyone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "undo refuses and asks", chromedp.Click(css(".undo-btn")),
		until(`document.getElementById("undo-dialog").open && document.getElementById("undo-files").textContent.includes("hello.txt")`))
	if b, _ := os.ReadFile(file); string(b) != "Hello, everyone\n" {
		t.Fatalf("hello.txt after a refused undo: %q, want the user's change kept", b)
	}
	shot(t, ctx, "undo")
	do(t, ctx, "undo anyway", chromedp.Click(css("#undo-force")),
		until(`(document.querySelector('.undo-btn')||{}).textContent === "Undone" && document.querySelector('.undo-btn').disabled`))
	if b, _ := os.ReadFile(file); string(b) != "Hello, wrld\n" {
		t.Errorf("hello.txt after undoing anyway: %q, want the content before the turn", b)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestThePageAttachesTextFiles: files picked with Attach go with the next
// message as input parts of type file; the model reads them in the user's
// message, and the page shows them folded under the bubble. A binary file
// is refused on the page. After a reload the context meter shows the
// turn's last request.
func TestThePageAttachesTextFiles(t *testing.T) {
	r := newRig(t)
	r.script("web", scripted.Script{Rounds: []scripted.Round{{Text: "It lists two steps.", Expect: []scripted.Expect{
		{LastUser: &scripted.TextExpect{Contains: "Summarise\n\nAttached file \"plan.md\" (20 bytes):\n```\n1. build\n2. ship it\n```\n"}},
	}}}})
	dir := t.TempDir()
	plan, bin := filepath.Join(dir, "plan.md"), filepath.Join(dir, "logo.png")
	if err := os.WriteFile(plan, []byte("1. build\n2. ship it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	do(t, ctx, "new thread",
		chromedp.Click(css("#new-thread")),
		chromedp.SendKeys(css(`#new-form input[name=model]`), "script:web"),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`))
	do(t, ctx, "a binary file is refused", chromedp.SetUploadFiles(css("#attach-input"), []string{bin}),
		until(`(document.getElementById("toast")||{}).textContent === "logo.png is not a text file" && document.getElementById("attachments").hidden`))
	do(t, ctx, "attach", chromedp.SetUploadFiles(css("#attach-input"), []string{plan}),
		until(`!document.getElementById("attachments").hidden && document.querySelector("#attachments .chip").textContent.startsWith("plan.md")`))
	do(t, ctx, "send", chromedp.SendKeys(css("#input"), "Summarise"+kb.Enter),
		until(`document.getElementById("attachments").hidden`),
		until(`!!document.querySelector('.turn-foot[data-status=completed]')`),
		until(`document.querySelector('.item.user .bubble').textContent === "Summarise" && document.querySelector('.item.user details.attachment summary').textContent.startsWith("plan.md") && document.querySelector('.item.user details.attachment pre').textContent === "1. build\n2. ship it"`))
	// The context meter is filled after a reload, before any new request
	// (thread/read's context).
	do(t, ctx, "meter", until(`!document.getElementById("meter").hidden`))
	meter := eval[string](t, ctx, `document.getElementById("meter-text").textContent`)
	do(t, ctx, "reload", chromedp.Reload(), until(`document.body.dataset.conn === "open" && !!document.body.dataset.thread`),
		until(`!document.getElementById("meter").hidden && document.getElementById("meter-text").textContent === `+strconv.Quote(meter)))
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
