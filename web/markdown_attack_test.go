package web_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestMarkdownAModelWritesCannotFreezeThePage: md.js renders what a model
// streams, and a hostile model chooses it. Each answer below froze the tab
// for seconds to minutes on a regular expression that backtracked over a
// long line (or overflowed the stack on deep quotes); each must render in
// well under a second (2 s allowed: the machine is shared), and its text
// must all be on the page (a code block's language aside).
func TestMarkdownAModelWritesCannotFreezeThePage(t *testing.T) {
	r := newRig(t)
	ctx, _ := browser(t, 800, 600)
	do(t, ctx, "page", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	var runs strings.Builder
	for k := 1; runs.Len() < 20000; k++ {
		runs.WriteString(strings.Repeat("`", k) + "a")
	}
	for _, c := range []struct{ name, text string }{
		{"a line of backticks", strings.Repeat("`", 3000)},                                      // cubic in node: 20 s at 4,000
		{"runs of backticks, each longer", runs.String()},                                       // Chromium: 50 s
		{"unclosed link texts", strings.Repeat("[", 100000)},                                    // quadratic in node: 12 s
		{"bold underscores that never close", strings.Repeat(" __a", 50000)},                    // Chromium: 25 s
		{"a code block of unclosed strings", "```js\n" + strings.Repeat(`"\`, 49000) + "\n```"}, // Chromium: 16 s
		{"quotes nested 100,000 deep", strings.Repeat(">", 100000) + " x"},                      // RangeError: call stack
	} {
		got := eval[string](t, ctx, fmt.Sprintf(`import("/assets/md.js").then(({render}) => {
			const text = %s, el = document.createElement("div");
			const t0 = performance.now();
			try { render(el, text); } catch (e) { return "threw " + e; }
			const ms = performance.now() - t0;
			const want = text.replace(/^`+"```"+`\w*\n/, "").replace(/[\s>`+"`"+`]/g, "").length, have = el.textContent.replace(/[\s>`+"`"+`]/g, "").length;
			if (have < want) return "lost text: " + have + " of " + want;
			return ms < 2000 ? "ok" : "took " + Math.round(ms) + " ms";
		})`, strconv.Quote(c.text)), chromedp.EvalAwaitPromise)
		if got != "ok" {
			t.Errorf("%s (%d bytes): %s", c.name, len(c.text), got)
		}
	}
}
