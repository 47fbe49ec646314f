package web

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestMarkdown(t *testing.T) {
	base, _ := url.Parse("https://example.com/dir/page.html")
	for _, tc := range []struct {
		name, in, want string
	}{
		{"paragraphs collapse whitespace", "<p>a\n  b</p><p>c</p>", "a b\n\nc"},
		{"headings", "<h2>Two</h2><p>x</p><h3>Three</h3>", "## Two\n\nx\n\n### Three"},
		{"emphasis keeps spaces outside", "<p>a<b> bold </b>b<i>it</i></p>", "a **bold** b_it_"},
		{"empty emphasis disappears", "<p>a<b> </b>b</p>", "a b"},
		{"links resolve against the page", `<p><a href="other.html">rel</a> <a href="/abs">abs</a> <a href="https://x.org/">ext</a></p>`,
			"[rel](https://example.com/dir/other.html) [abs](https://example.com/abs) [ext](https://x.org/)"},
		{"fragment and script links are text", `<p><a href="#top">top</a> <a href="javascript:void(0)">js</a></p>`, "top js"},
		{"images with alt", `<p><img src="i.png" alt="a cat"><img src="x.png"></p>`, "![a cat](https://example.com/dir/i.png)"},
		{"nested lists", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n  - b\n- c"},
		{"ordered list with start", `<ol start="3"><li>x</li><li>y</li></ol>`, "3. x\n4. y"},
		{"paragraphs in list items", "<ul><li><p>a</p></li><li><p>b</p></li></ul>", "- a\n- b"},
		{"blockquote", "<blockquote><p>q1</p><p>q2</p></blockquote><p>after</p>", "> q1\n>\n> q2\n\nafter"},
		{"table", "<table><tr><th>k</th><th>v</th></tr><tr><td>a|b</td><td>1</td></tr><tr><td>c</td></tr></table>",
			"| k | v |\n| --- | --- |\n| a\\|b | 1 |\n| c |  |"},
		{"line breaks", "<p>a<br>b</p>", "a\nb"},
		{"rule", "<p>a</p><hr><p>b</p>", "a\n\n---\n\nb"},
		{"inline code with a backtick", "<p><code>a`b</code></p>", "``a`b``"},
		{"pre keeps text exactly", "<pre>  a\n    b</pre>", "```\n  a\n    b\n```"},
		{"skipped elements", `<p>x</p><script>s()</script><style>p{}</style><form><input value=v></form>` +
			`<div aria-hidden="true">h</div><div style="display: none">n</div><nav>menu</nav><p>y</p>`, "x\n\ny"},
		{"main content only", "<header>site</header><main><p>body</p></main><footer>f</footer>", "body"},
		{"single article", "<div>chrome</div><article><p>story</p></article>", "story"},
		{"two articles render the body", "<article><p>a</p></article><article><p>b</p></article>", "a\n\nb"},
		{"divs break lines", "<div>a</div><div>b</div>", "a\nb"},
		{"text stays UTF-8", "<p>naïve — ✓</p>", "naïve — ✓"},
		{"entities decoded", "<p>a &amp; b &lt;c&gt;</p>", "a & b <c>"},
		{"inline svg dropped", `<p>a<svg><title>icon</title><text>t</text></svg>b</p>`, "ab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := html.Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			_, got := Markdown(doc, base)
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestMarkdownTitle(t *testing.T) {
	doc, _ := html.Parse(strings.NewReader("<html><head><title>\n A\tTitle </title></head><body><svg><title>no</title></svg></body></html>"))
	if title, _ := Markdown(doc, nil); title != "A Title" {
		t.Errorf("title %q", title)
	}
}
