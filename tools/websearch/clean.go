package websearch

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Caps of one result's text, in characters.
const (
	maxTitle   = 200
	maxSnippet = 600
	maxURL     = 2048
)

// clean returns s as plain text: HTML tags removed and entities decoded
// (Brave marks matches with <strong>, SearXNG passes engines' markup
// through), control and format characters (bidi overrides, zero-width
// joiners) dropped, whitespace collapsed, cut to at most n characters.
func clean(s string, n int) string {
	if strings.ContainsAny(s, "<&") {
		s = textOf(s)
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError || unicode.Is(unicode.Cf, r) || unicode.IsControl(r) && !unicode.IsSpace(r):
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if utf8.RuneCountInString(out) > n {
		out = strings.TrimRightFunc(string([]rune(out)[:n-1]), unicode.IsSpace) + "…"
	}
	return out
}

// textOf returns the text of an HTML fragment, without script and style.
func textOf(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) == "script" || string(name) == "style" {
				skip++
			}
			b.WriteByte(' ')
		case html.EndTagToken:
			if name, _ := z.TagName(); (string(name) == "script" || string(name) == "style") && skip > 0 {
				skip--
			}
		}
	}
}

// cleanURL returns u if it is an absolute http(s) URL of reasonable length
// with no control characters, else "". A result without a usable URL is
// dropped.
func cleanURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" || len(u) > maxURL {
		return ""
	}
	for _, r := range u {
		if r <= ' ' || r == 0x7f || unicode.Is(unicode.Cf, r) {
			return ""
		}
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
		return ""
	}
	return u
}

// result returns a cleaned result, and false when it has no usable URL.
func result(title, link, snippet, published string) (Result, bool) {
	link = cleanURL(link)
	if link == "" {
		return Result{}, false
	}
	r := Result{Title: clean(title, maxTitle), URL: link, Snippet: clean(snippet, maxSnippet), Published: clean(published, 40)}
	if r.Title == "" {
		r.Title = link
	}
	return r, true
}

// siteQuery adds a site: operator for backends that read it in the query.
func siteQuery(q Query) string {
	if q.Site == "" {
		return q.Text
	}
	return q.Text + " site:" + q.Site
}
