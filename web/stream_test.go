package web_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestStreamingRebuildsOnlyTheTailOfALongBlock: a streamed answer whose
// last block is long (a code block of hundreds of lines, a long list, a
// table, a paragraph of many lines) keeps the nodes of what in that block
// is final and rebuilds only its end (the last line, item or row; the last
// chunk of 16 lines of code) at each paint, so a paint costs the same at
// the end of the block as at its start. Counted as the nodes a
// MutationObserver sees added: the second half of the paints adds about
// as many as the first, where rebuilding the whole block at each paint
// adds three times as many (the block is longer) and hundreds of times
// the block's own nodes in all.
func TestStreamingRebuildsOnlyTheTailOfALongBlock(t *testing.T) {
	r := newRig(t)
	ctx, _ := browser(t, 800, 600)
	do(t, ctx, "page", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	var code, list, table, para strings.Builder
	code.WriteString("```go\n")
	list.WriteString("Steps:\n\n")
	table.WriteString("| n | square |\n|---|---|\n")
	for i := range 300 {
		fmt.Fprintf(&code, "func f%d(x int) int { return x * %d } // number %d\n", i, i, i)
		fmt.Fprintf(&list, "- step %d does **something** with `x%d`\n", i, i)
		fmt.Fprintf(&table, "| %d | %d |\n", i, i*i)
		fmt.Fprintf(&para, "line %d of a *long* paragraph\n", i)
	}
	code.WriteString("```\n")
	for _, c := range []struct{ name, text string }{
		{"code", code.String()}, {"list", list.String()}, {"table", table.String()}, {"paragraph", para.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eval[string](t, ctx, fmt.Sprintf(`import("/assets/md.js").then(({render}) => {
				const text = %s, whole = document.createElement("div"), streamed = document.createElement("div");
				render(whole, text);
				let added = 0, firstHalf = 0;
				const count = (n) => { added++; for (const k of n.childNodes) count(k); };
				const mo = new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes) count(n); });
				mo.observe(streamed, {childList: true, subtree: true});
				const final = whole.getElementsByTagName("*").length + 1;
				let paints = 0;
				for (let i = 40; i < text.length + 40; i += 40) {
					render(streamed, text.slice(0, i));
					mo.takeRecords().forEach(m => m.addedNodes.forEach(count));
					if (++paints === Math.ceil(text.length / 80)) firstHalf = added;
				}
				mo.disconnect();
				if (streamed.innerHTML !== whole.innerHTML) return "differs from the whole render";
				return JSON.stringify({added, first: firstHalf, final, paints});
			})`, strconv.Quote(c.text)), chromedp.EvalAwaitPromise)
			var added, first, final, paints int
			if _, err := fmt.Sscanf(got, `{"added":%d,"first":%d,"final":%d,"paints":%d}`, &added, &first, &final, &paints); err != nil {
				t.Fatalf("%s", got)
			}
			second := added - first
			if float64(second) > 1.6*float64(first) || added > 50*final {
				t.Errorf("%d paints added %d nodes (%d in the first half, %d in the second) for a block of %d elements; want the second half about as many as the first (only the block's end rebuilt at each paint)", paints, added, first, second, final)
			}
			t.Logf("%d paints added %d nodes (%d in the first half, %d in the second); the finished block has %d elements", paints, added, first, second, final)
		})
	}
}

// TestACodeBlockCopiesAsItsText: a code block is laid out in chunks of
// lines (md.js), and selecting it copies its text as written: no line
// added or lost where chunks meet.
func TestACodeBlockCopiesAsItsText(t *testing.T) {
	r := newRig(t)
	ctx, _ := browser(t, 800, 600)
	do(t, ctx, "page", chromedp.Navigate(r.srv.SignInURL(r.addr, token)), until(`document.body.dataset.conn === "open"`))
	var body strings.Builder
	for i := range 40 {
		fmt.Fprintf(&body, "x%d := %d // line %d\n", i, i, i)
		if i%7 == 0 {
			body.WriteString("\n")
		}
	}
	code := strings.TrimSuffix(body.String(), "\n")
	got := eval[string](t, ctx, fmt.Sprintf(`import("/assets/md.js").then(({render}) => {
		const el = document.createElement("div");
		el.className = "md";
		document.getElementById("log").appendChild(el);
		render(el, "`+"```go\\n"+`" + %s + "`+"\\n```"+`");
		const pre = el.querySelector("pre");
		const r = document.createRange();
		r.selectNodeContents(pre.firstChild);
		getSelection().removeAllRanges();
		getSelection().addRange(r);
		const chunks = pre.querySelectorAll(".ck").length;
		return JSON.stringify({copied: getSelection().toString(), chunks, lines: Math.round(pre.firstChild.getBoundingClientRect().height / parseFloat(getComputedStyle(pre.firstChild).lineHeight))});
	})`, strconv.Quote(code)), chromedp.EvalAwaitPromise)
	var res struct {
		Copied        string
		Chunks, Lines int
	}
	if err := json.Unmarshal([]byte(got), &res); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if res.Chunks < 2 {
		t.Errorf("a code block of %d lines is in %d chunks, want several", strings.Count(code, "\n")+1, res.Chunks)
	}
	if res.Copied != code {
		t.Errorf("the code block copies as\n%q\nwant\n%q", res.Copied, code)
	}
	if want := strings.Count(code, "\n") + 1; res.Lines != want {
		t.Errorf("the code block shows %d lines, want %d", res.Lines, want)
	}
}
