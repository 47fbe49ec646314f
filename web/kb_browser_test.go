package web_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/store"
	kbtool "github.com/reinhq/rein/tools/kb"
)

// TestThePageStartsAThreadWithAKnowledgeBase: the new-thread dialog lists
// the bases the server knows (initialize's defaults); the one picked is
// the thread's, so its first message is seeded from it and the model is
// offered rag over it, whose search finds the passage. The runtime is rein
// serve's (agent.Runtime over a store), the model a script.
func TestThePageStartsAThreadWithAKnowledgeBase(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "office.md"), []byte("# The office\n\nOur office cat is named Mochi and sleeps on the printer.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "other.md"), []byte("# Parking\n\nThe car park opens at seven.\n"), 0o644)
	for _, name := range []string{"handbook", "parking"} {
		if _, err := kbtool.Add(t.Context(), st, name, []string{docs}, kbtool.AddOptions{RelativeTo: docs}); err != nil {
			t.Fatal(err)
		}
	}
	model := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Expect: []scripted.Expect{{LastUser: &scripted.TextExpect{Contains: "Mochi"}}, {ToolsInclude: []string{kbtool.RagName}}},
			Calls: []scripted.Call{{ID: "r1", Name: kbtool.RagName, Args: map[string]any{"kb_name": "handbook", "query": "office cat"}}}},
		{Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Call: "r1", Status: "ok", Contains: "Mochi"}}},
			Text: "The office cat is called Mochi."},
	}})
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: st, Defaults: record.Settings{Model: "scripted:kb.yaml", Workspace: dir, Approval: "never"},
		Open: func(spec provider.Spec) (*provider.Resolved, error) {
			return &provider.Resolved{Spec: spec, Model: model}, nil
		},
	})
	t.Cleanup(rt.Close)
	sched, err := rt.Scheduler()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Sessions: sched, KnowledgeBases: rt.KnowledgeBases, CheckThread: rt.Check})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler(token))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sched.Close(c)
	})
	ctx, consoleErrors := browser(t, 1280, 860)
	do(t, ctx, "sign in", chromedp.Navigate(srv.SignInURL(hs.Listener.Addr(), token)), until(`document.body.dataset.conn === "open"`))
	do(t, ctx, "new thread with a base",
		chromedp.Click(css("#new-thread")),
		until(`!document.getElementById("new-kbs").hidden && [...document.querySelectorAll("#kb-list input")].map(i => i.value).join() === "handbook,parking"`),
		chromedp.Click(css(`#kb-list input[value=handbook]`)),
		chromedp.Click(css("#new-ok")),
		until(`!!document.body.dataset.thread && !document.getElementById("input").disabled`),
		until(`document.getElementById("thread-meta").textContent.includes("kb handbook")`),
		chromedp.SendKeys(css("#input"), "What is the office cat called?"+kb.Enter),
		until(`[...document.querySelectorAll(".item")].some(e => e.textContent.includes("The office cat is called Mochi."))`),
	)
	if err := model.Verify(); err != nil {
		t.Errorf("the script: %v", err)
	}
	id := eval[string](t, ctx, `document.body.dataset.thread`)
	th, err := st.Thread(t.Context(), id)
	if err != nil || strings.Join(th.Settings.KBs, ",") != "handbook" {
		t.Errorf("thread %s settings KBs = %v (%v), want [handbook]", id, th.Settings.KBs, err)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestTheNewThreadDialogListsTheBasesAsTheyAreNow: a base added to the
// server's store after the page connected (rein kb add, from another
// process) is offered the next time the new-thread dialog opens, and a
// base removed is no longer offered, without reloading the page
// (knowledge/list).
func TestTheNewThreadDialogListsTheBasesAsTheyAreNow(t *testing.T) {
	var mu sync.Mutex
	bases := []string{"handbook"}
	r := newRigWith(t, func(c *server.Config) {
		c.KnowledgeBases = func(context.Context) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(bases), nil
		}
	})
	ctx, consoleErrors := browser(t, 1280, 860)
	const listed = `[...document.querySelectorAll("#kb-list input")].map(i => i.value).join()`
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`),
		chromedp.Click(css("#new-thread")), until(listed+` === "handbook"`), chromedp.Click(css("#new-cancel")))
	mu.Lock()
	bases = []string{"handbook", "parking"}
	mu.Unlock()
	do(t, ctx, "a base added", chromedp.Click(css("#new-thread")), until(listed+` === "handbook,parking"`),
		chromedp.Click(css(`#kb-list input[value=parking]`)), chromedp.Click(css("#new-cancel")))
	mu.Lock()
	bases = []string{"parking"}
	mu.Unlock()
	do(t, ctx, "a base removed", chromedp.Click(css("#new-thread")), until(listed+` === "parking"`),
		until(`!document.querySelector("#kb-list input").checked`))
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestTheBasesListedAgainKeepTheirBoxes: the dialog lists the bases it
// knew at once, then as knowledge/list gives them; a box the user checked
// and focused before the answer came is the same box after it, still
// checked and focused, and a base that came with the answer is added in
// its place. Before, the list was drawn anew: the box was replaced under
// the user (a click on its way found no box; the focus was lost).
func TestTheBasesListedAgainKeepTheirBoxes(t *testing.T) {
	var mu sync.Mutex
	bases := []string{"handbook", "parking"}
	var gate chan struct{} // when set, knowledge/list waits for it
	r := newRigWith(t, func(c *server.Config) {
		c.KnowledgeBases = func(ctx context.Context) ([]string, error) {
			mu.Lock()
			g := gate
			mu.Unlock()
			if g != nil {
				select {
				case <-g:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(bases), nil
		}
	})
	ctx, consoleErrors := browser(t, 1280, 860)
	const listed = `[...document.querySelectorAll("#kb-list input")].map(i => i.value).join()`
	do(t, ctx, "sign in", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	release := make(chan struct{})
	mu.Lock()
	gate, bases = release, []string{"archive", "handbook", "parking"}
	mu.Unlock()
	do(t, ctx, "check a base before the list comes", chromedp.Click(css("#new-thread")), until(listed+` === "handbook,parking"`),
		chromedp.Click(css(`#kb-list input[value=handbook]`)))
	eval[bool](t, ctx, `document.querySelector("#kb-list input[value=handbook]").mine = true`)
	close(release)
	do(t, ctx, "the list comes", until(listed+` === "archive,handbook,parking"`))
	if !eval[bool](t, ctx, `(() => { const i = document.querySelector("#kb-list input[value=handbook]"); return i.mine === true && i.checked && document.activeElement === i; })()`) {
		t.Error("the handbook box was replaced, unchecked or unfocused when the list came")
	}
	if eval[bool](t, ctx, `document.querySelector("#kb-list input[value=archive]").checked`) {
		t.Error("a base that came with the list is checked")
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
