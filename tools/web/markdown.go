package web

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Markdown renders a parsed HTML document as markdown for a model to read:
// headings, paragraphs, lists, links, emphasis, code, quotes and tables are
// kept; scripts, styles, forms, hidden elements and navigation are dropped.
// When the page marks its main content (<main>, role=main, or a single
// <article>) only that is rendered. Relative links are resolved against
// base, which may be nil.
func Markdown(doc *html.Node, base *url.URL) (title, text string) {
	title = strings.Join(strings.Fields(textOf(find(doc, isTitle))), " ")
	root := mainContent(doc)
	if root == nil {
		return title, ""
	}
	w := &mdWriter{base: base}
	w.children(root)
	return title, w.String()
}

func isTitle(n *html.Node) bool {
	return n.Type == html.ElementNode && n.DataAtom == atom.Title && n.Namespace == ""
}

// mainContent returns the element holding the page's main content, or the
// body, or the document.
func mainContent(doc *html.Node) *html.Node {
	if m := find(doc, func(n *html.Node) bool {
		return n.Type == html.ElementNode && (n.DataAtom == atom.Main || attr(n, "role") == "main") && !skipped(n)
	}); m != nil {
		return m
	}
	var articles []*html.Node
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Article {
			articles = append(articles, n)
			return false
		}
		return true
	})
	if len(articles) == 1 {
		return articles[0]
	}
	if b := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.DataAtom == atom.Body }); b != nil {
		return b
	}
	return doc
}

// find returns the first node in document order for which ok holds.
func find(n *html.Node, ok func(*html.Node) bool) *html.Node {
	var found *html.Node
	walk(n, func(c *html.Node) bool {
		if found == nil && ok(c) {
			found = c
		}
		return found == nil
	})
	return found
}

// walk calls fn on n and its descendants in document order; fn returning
// false skips a node's children.
func walk(n *html.Node, fn func(*html.Node) bool) {
	if !fn(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return strings.TrimSpace(a.Val)
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

// skipped says n and its subtree carry nothing a reader sees.
func skipped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return n.Type == html.CommentNode
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Svg, atom.Math,
		atom.Canvas, atom.Iframe, atom.Object, atom.Embed, atom.Audio, atom.Video,
		atom.Button, atom.Select, atom.Input, atom.Textarea, atom.Form, atom.Nav, atom.Dialog:
		return true
	}
	if n.Namespace != "" {
		return true // inline SVG and MathML content
	}
	if hasAttr(n, "hidden") || attr(n, "aria-hidden") == "true" || attr(n, "role") == "navigation" {
		return true
	}
	style := strings.ReplaceAll(strings.ToLower(attr(n, "style")), " ", "")
	return strings.Contains(style, "display:none") || strings.Contains(style, "visibility:hidden")
}

// textOf returns the text content of n with its whitespace as is.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return c == n || !skipped(c)
	})
	return b.String()
}

// mdWriter writes markdown, collapsing whitespace outside <pre> and
// placing line breaks only between blocks.
type mdWriter struct {
	base *url.URL
	b    strings.Builder
	// prefix is written at the start of every line: quote markers and
	// list indentation.
	prefix []string
	// nl is how many line breaks the next content needs (1 a new line, 2 a
	// blank line); space says a space is pending between words.
	nl    int
	space bool
	// fresh says a line holds only a prefix or list marker so far, so a
	// block starting now needs no line break of its own.
	fresh bool
	pre   int
	// inline renders blocks as spaces: inside link text and table cells.
	inline bool
}

func (w *mdWriter) String() string {
	lines := strings.Split(w.b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// block asks for n line breaks before the next content.
func (w *mdWriter) block(n int) {
	if w.inline {
		w.space = true
		return
	}
	if w.b.Len() == 0 || w.fresh {
		return
	}
	w.nl = max(w.nl, n)
}

// flush writes the pending line breaks, with the prefix after each, or the
// pending space.
func (w *mdWriter) flush() {
	if w.nl > 0 {
		pre := strings.Join(w.prefix, "")
		for i := range w.nl {
			w.b.WriteByte('\n')
			if i < w.nl-1 {
				w.b.WriteString(strings.TrimRight(pre, " "))
			}
		}
		w.b.WriteString(pre)
		w.nl, w.space = 0, false
		return
	}
	if w.space && !w.fresh && w.b.Len() > 0 {
		w.b.WriteByte(' ')
	}
	w.space = false
}

// raw writes markup as is.
func (w *mdWriter) raw(s string) {
	w.flush()
	w.b.WriteString(s)
	w.fresh = false
}

// marker writes a list marker: the start of a line whose content follows.
func (w *mdWriter) marker(s string) {
	w.flush()
	w.b.WriteString(s)
	w.fresh = true
}

// text writes a text node's words, collapsing whitespace.
func (w *mdWriter) text(s string) {
	if w.pre > 0 {
		w.preText(s)
		return
	}
	if s == "" {
		return
	}
	if isSpace(s[0]) {
		w.space = true
	}
	words := strings.Fields(s)
	for i, word := range words {
		if i > 0 {
			w.space = true
		}
		w.flush()
		w.b.WriteString(word)
		w.fresh = false
	}
	if isSpace(s[len(s)-1]) && len(words) > 0 {
		w.space = true
	}
}

// preText writes preformatted text, with the prefix after each line break.
func (w *mdWriter) preText(s string) {
	w.flush()
	pre := strings.Join(w.prefix, "")
	w.b.WriteString(strings.ReplaceAll(s, "\n", "\n"+pre))
	w.fresh = false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func (w *mdWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

func (w *mdWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.DocumentNode:
		w.children(n)
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped(n) {
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		level := int(n.Data[1] - '0')
		if w.inline {
			w.children(n)
			return
		}
		content := w.inlineOf(n)
		if content == "" {
			return
		}
		w.block(2)
		w.raw(strings.Repeat("#", level) + " " + content)
		w.block(2)
	case atom.P, atom.Blockquote, atom.Pre, atom.Table, atom.Ul, atom.Ol, atom.Dl, atom.Hr,
		atom.Figure, atom.Details, atom.Address, atom.Fieldset:
		w.blockElement(n)
	case atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Aside,
		atom.Figcaption, atom.Summary, atom.Dt, atom.Li, atom.Caption, atom.Center:
		w.block(1)
		w.children(n)
		w.block(1)
	case atom.Dd:
		w.block(1)
		w.prefix = append(w.prefix, "  ")
		w.children(n)
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.block(1)
	case atom.Br:
		if w.inline {
			w.space = true
			return
		}
		w.nl = max(w.nl, 1)
		w.fresh = false
	case atom.Strong, atom.B:
		w.wrap(n, "**", "**")
	case atom.Em, atom.I:
		w.wrap(n, "_", "_")
	case atom.Del, atom.S, atom.Strike:
		w.wrap(n, "~~", "~~")
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		if w.pre > 0 {
			w.children(n)
			return
		}
		content := strings.Join(strings.Fields(textOf(n)), " ")
		fence := "`"
		if strings.Contains(content, "`") {
			fence = "``"
		}
		w.inlineMarkup(n, fence+content+fence, content)
	case atom.A:
		w.link(n)
	case atom.Img:
		alt := strings.Join(strings.Fields(attr(n, "alt")), " ")
		if alt == "" {
			return
		}
		src := w.resolve(attr(n, "src"))
		if src == "" || strings.HasPrefix(src, "data:") {
			w.text(" [image: " + alt + "] ")
			return
		}
		w.flush()
		w.raw("![" + alt + "](" + src + ")")
	default:
		w.children(n)
	}
}

// blockElement renders the elements that stand apart from the text around
// them with a blank line.
func (w *mdWriter) blockElement(n *html.Node) {
	if w.inline {
		w.space = true
		w.children(n)
		w.space = true
		return
	}
	switch n.DataAtom {
	case atom.Hr:
		w.block(2)
		w.raw("---")
		w.block(2)
		return
	case atom.Pre:
		// The code's own markup (highlighting spans) is dropped; its text
		// is kept exactly.
		code := strings.TrimRight(strings.ReplaceAll(textOf(n), "\r\n", "\n"), "\n")
		w.block(2)
		w.raw("```" + codeLanguage(n))
		w.nl = 1
		w.pre++
		w.text(code)
		w.pre--
		w.nl = 1
		w.raw("```")
		w.block(2)
		return
	case atom.Blockquote:
		w.block(2)
		w.flush()
		w.prefix = append(w.prefix, "> ")
		w.b.WriteString("> ")
		w.fresh = true
		w.children(n)
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.fresh = false
		w.block(2)
		return
	case atom.Ul, atom.Ol:
		w.list(n)
		return
	case atom.Table:
		w.table(n)
		return
	}
	w.block(2)
	w.children(n)
	w.block(2)
}

// codeLanguage returns the language of a code block from a class such as
// "language-go" on the <pre> or its <code>.
func codeLanguage(pre *html.Node) string {
	for _, n := range []*html.Node{pre, pre.FirstChild} {
		if n == nil || n.Type != html.ElementNode {
			continue
		}
		for c := range strings.FieldsSeq(attr(n, "class")) {
			if l, ok := strings.CutPrefix(c, "language-"); ok {
				return l
			}
			if l, ok := strings.CutPrefix(c, "lang-"); ok {
				return l
			}
		}
	}
	return ""
}

func (w *mdWriter) list(n *html.Node) {
	// A list inside a list item hangs under it; others stand apart.
	gap := 2
	if w.inList() {
		gap = 1
	}
	w.block(gap)
	num := 1
	if n.DataAtom == atom.Ol {
		if s, err := strconv.Atoi(attr(n, "start")); err == nil {
			num = s
		}
	}
	first := true
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode || skipped(li) {
			continue
		}
		if li.DataAtom != atom.Li {
			// Stray content in a list: render it where it stands.
			w.node(li)
			continue
		}
		mark := "- "
		if n.DataAtom == atom.Ol {
			mark = strconv.Itoa(num) + ". "
			num++
		}
		// Items follow each other without blank lines, even when their
		// paragraphs asked for them.
		w.fresh = false
		if !first {
			w.nl = min(w.nl, 1)
		}
		first = false
		w.block(1)
		w.marker(mark)
		w.prefix = append(w.prefix, strings.Repeat(" ", len(mark)))
		w.children(li)
		w.prefix = w.prefix[:len(w.prefix)-1]
		w.fresh = false
	}
	w.block(gap)
}

// inList says the writer is inside a list item.
func (w *mdWriter) inList() bool {
	for _, p := range w.prefix {
		if strings.TrimSpace(p) == "" {
			return true
		}
	}
	return false
}

func (w *mdWriter) table(n *html.Node) {
	var rows [][]string
	walk(n, func(c *html.Node) bool {
		if c != n && skipped(c) {
			return false
		}
		if c.Type == html.ElementNode && c.DataAtom == atom.Tr {
			var row []string
			for cell := c.FirstChild; cell != nil; cell = cell.NextSibling {
				if cell.Type == html.ElementNode && (cell.DataAtom == atom.Td || cell.DataAtom == atom.Th) {
					row = append(row, strings.ReplaceAll(w.inlineOf(cell), "|", `\|`))
				}
			}
			if len(row) > 0 {
				rows = append(rows, row)
			}
			return false
		}
		// A table nested in a cell is rendered as the cell's text.
		return c == n || c.DataAtom != atom.Table
	})
	if len(rows) == 0 {
		return
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	w.block(2)
	for i, r := range rows {
		for len(r) < cols {
			r = append(r, "")
		}
		if i > 0 {
			w.nl = 1
		}
		w.raw("| " + strings.Join(r, " | ") + " |")
		if i == 0 {
			w.nl = 1
			w.raw("|" + strings.Repeat(" --- |", cols))
		}
	}
	w.block(2)
}

// inlineOf renders n's children on one line.
func (w *mdWriter) inlineOf(n *html.Node) string {
	sub := &mdWriter{base: w.base, inline: true}
	sub.children(n)
	return strings.Join(strings.Fields(sub.b.String()), " ")
}

// wrap renders n's children between open and close, keeping the spaces
// around them outside the markup (where markdown needs them).
func (w *mdWriter) wrap(n *html.Node, open, close string) {
	content := w.inlineOf(n)
	w.inlineMarkup(n, open+content+close, content)
}

// inlineMarkup writes s for the element n, or nothing when its content is
// empty, keeping the whitespace at n's edges as spaces.
func (w *mdWriter) inlineMarkup(n *html.Node, s, content string) {
	t := textOf(n)
	if content == "" {
		if strings.TrimSpace(t) == "" && t != "" {
			w.space = true
		}
		return
	}
	if t != "" && isSpace(t[0]) {
		w.space = true
	}
	w.flush()
	w.raw(s)
	if t != "" && isSpace(t[len(t)-1]) {
		w.space = true
	}
}

func (w *mdWriter) link(n *html.Node) {
	content := w.inlineOf(n)
	href := attr(n, "href")
	target := w.resolve(href)
	switch {
	case content == "":
		w.inlineMarkup(n, "", "")
	case href == "" || strings.HasPrefix(href, "#") || target == "" ||
		strings.HasPrefix(strings.ToLower(target), "javascript:"):
		w.inlineMarkup(n, content, content)
	default:
		w.inlineMarkup(n, "["+content+"]("+target+")", content)
	}
}

// resolve returns href made absolute against the page's URL.
func (w *mdWriter) resolve(href string) string {
	if href == "" {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	return u.String()
}
