package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/session"
)

// focused is the id of the element with the focus, or its tag.
const focused = `(document.activeElement.id || document.activeElement.tagName)`

// tab presses Tab and returns what has the focus then.
func tab(t *testing.T, ctx context.Context) string {
	t.Helper()
	do(t, ctx, "Tab", chromedp.KeyEvent(kb.Tab))
	return eval[string](t, ctx, focused)
}

// TestThePageWorksByKeyboardAlone: from the first Tab to an interrupted
// turn without a pointer. The focus order starts at New thread and skips
// the composer while no thread is open; Enter opens the dialog and starts
// the thread; the focus is then in the message box, where Shift+Enter
// makes a new line and Enter sends; an approval takes the focus on its
// Approve button, which Enter presses; Esc interrupts the turn.
func TestThePageWorksByKeyboardAlone(t *testing.T) {
	r := newRig(t)
	r.script("kbd", scripted.Script{Chunk: 4, Delay: 30 * time.Millisecond, Rounds: []scripted.Round{
		{Text: "Editing.", Calls: []scripted.Call{{Name: "edit_file", Args: map[string]any{"path": "a.txt", "old_string": "x\n", "new_string": "y\n"}}}},
		{Text: "And now a long answer. " + strings.Repeat("It goes on and on. ", 200)},
	}})
	if err := os.WriteFile(filepath.Join(r.dir, "a.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	var order []string
	for range 4 {
		order = append(order, tab(t, ctx))
	}
	if want := "new-thread search theme"; strings.Join(order[:3], " ") != want || order[3] == "attach" || order[3] == "input" {
		t.Errorf("the focus order with no thread open: %v, want %s then nothing of the composer", order, want)
	}
	do(t, ctx, "back to New thread", until(`(document.getElementById("new-thread").focus(), true)`))
	do(t, ctx, "Enter opens the dialog", chromedp.KeyEvent(kb.Enter), until(`document.getElementById("new-dialog").open`))
	if got := eval[string](t, ctx, focused); got != "INPUT" {
		t.Errorf("the dialog opens with the focus on %s, want its first field", got)
	}
	if got := tab(t, ctx); got != "INPUT" || !eval[bool](t, ctx, `document.activeElement.name === "model"`) {
		t.Errorf("Tab in the dialog goes to %s, want the model field", got)
	}
	do(t, ctx, "a model, Enter starts", chromedp.KeyEvent("script:kbd"), chromedp.KeyEvent(kb.Enter),
		until(`!document.getElementById("new-dialog").open && !!document.body.dataset.thread && !document.getElementById("input").disabled`),
		until(focused+` === "input"`))
	do(t, ctx, "Shift+Enter makes a new line", chromedp.KeyEvent("first line"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("second line"))
	if got := eval[string](t, ctx, `document.getElementById("input").value`); got != "first line\nsecond line" {
		t.Errorf("after Shift+Enter the message box holds %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(".item.user").length`); n != 0 {
		t.Errorf("Shift+Enter sent the message")
	}
	do(t, ctx, "Enter sends", chromedp.KeyEvent(kb.Enter),
		until(`(document.querySelector(".item.user .bubble")||{}).textContent === "first line\nsecond line"`))
	do(t, ctx, "the approval takes the focus", until(`document.activeElement.dataset.decision === "approve"`),
		chromedp.KeyEvent(kb.Enter), until(`(document.querySelector('.tool[data-status]')||{}).dataset?.status === "ok"`))
	do(t, ctx, "Esc interrupts", until(`(document.querySelector('.item.agent.streaming .md')||{textContent:""}).textContent.includes("on and on")`),
		chromedp.KeyEvent(kb.Escape), until(`!!document.querySelector('.turn-foot[data-status=interrupted]')`))
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestThePageFitsAPhone: at a phone's width (390 px) nothing is wider than
// the screen, the threads are off the screen and out of the focus order
// until the menu opens them, with the focus in them; picking a thread
// closes them and puts the focus in the message box; Esc closes them too
// and gives the focus back to the menu.
func TestThePageFitsAPhone(t *testing.T) {
	r := newRig(t)
	now := time.Now()
	if err := r.store.SaveThread(t.Context(), session.Thread{ID: "thread_phone", Title: "On the phone", Created: now, Updated: now, Settings: session.ThreadConfig{Model: "script:none"}}); err != nil {
		t.Fatal(err)
	}
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in on a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(r.srv.SignInURL(r.addr, token)),
		until(`document.body.dataset.conn === "open" && innerWidth === 390 && !!document.querySelector("#threads [data-thread=thread_phone]")`))
	if got := eval[string](t, ctx, `[document.documentElement.scrollWidth, document.querySelector(".top").scrollWidth, document.getElementById("composer").scrollWidth].join()`); got != "390,390,390" {
		t.Errorf("page, top bar and composer widths at 390 px: %s, want none wider", got)
	}
	if got := tab(t, ctx); got != "menu" {
		t.Errorf("the first Tab at a phone's width goes to %s, want the menu (the threads are closed)", got)
	}
	do(t, ctx, "the menu opens the threads", chromedp.KeyEvent(kb.Enter),
		until(`document.getElementById("side").classList.contains("open") && getComputedStyle(document.getElementById("side")).visibility === "visible"`),
		until(focused+` === "new-thread"`))
	tab(t, ctx) // the search
	if got := tab(t, ctx); !eval[bool](t, ctx, `document.activeElement.dataset.thread === "thread_phone"`) {
		t.Errorf("Tab from the search goes to %s, want the thread", got)
	}
	do(t, ctx, "Enter opens the thread", chromedp.KeyEvent(kb.Enter),
		until(`document.body.dataset.thread === "thread_phone" && !document.getElementById("side").classList.contains("open")`),
		until(focused+` === "input"`))
	do(t, ctx, "Esc closes the threads", until(`(document.getElementById("menu").focus(), true)`), chromedp.KeyEvent(kb.Enter),
		until(`document.getElementById("side").classList.contains("open")`), chromedp.KeyEvent(kb.Escape),
		until(`!document.getElementById("side").classList.contains("open") && `+focused+` === "menu"`))
	if got := eval[string](t, ctx, `(() => { const s = document.getElementById("send").getBoundingClientRect(); return s.right <= innerWidth && s.bottom <= innerHeight ? "in" : "out " + JSON.stringify(s); })()`); got != "in" {
		t.Errorf("the send button at 390 px is %s of the screen", got)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestTwoTabsOnOneThreadSeeEachOthersTurns: a turn started in one tab
// shows in the other tab open on the thread, its message, its answer as
// it streams and its end, and that tab's composer steers it meanwhile.
func TestTwoTabsOnOneThreadSeeEachOthersTurns(t *testing.T) {
	r := newRig(t)
	r.script("tabs", scripted.Script{Chunk: 4, Delay: 30 * time.Millisecond, Rounds: []scripted.Round{
		{Text: "Answered from one tab, seen in both. " + strings.Repeat("More words. ", 40)},
	}})
	a, consoleErrors := browser(t, 1280, 860)
	do(t, a, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`),
		chromedp.Click(css("#new-thread")), chromedp.SendKeys(css(`#new-form input[name=model]`), "script:tabs"), chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`))
	id := eval[string](t, a, `document.body.dataset.thread`)
	b, closeB := chromedp.NewContext(a)
	defer closeB()
	if err := chromedp.Do(b); err != nil {
		t.Fatal(err)
	}
	do(t, b, "the second tab", chromedp.Navigate(r.url+"/#thread="+id), until(`document.body.dataset.thread === "`+id+`" && !document.getElementById("input").disabled`))
	do(t, b, "a message from the second tab", chromedp.SendKeys(css("#input"), "Hello from B"+kb.Enter))
	do(t, a, "the first tab sees it and the answer stream",
		until(`(document.querySelector(".item.user .bubble")||{}).textContent === "Hello from B"`),
		until(`(document.querySelector(".item.agent.streaming .md")||{textContent:""}).textContent.includes("seen in both")`),
		until(`document.getElementById("send").textContent === "Steer"`),
		until(`!!document.querySelector(".turn-foot[data-status=completed]") && document.getElementById("send").textContent === "Send"`))
	if got := eval[int](t, a, `document.querySelectorAll(".item.user").length`); got != 1 {
		t.Errorf("the first tab shows %d user messages, want 1", got)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
