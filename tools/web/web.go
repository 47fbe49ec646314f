// Package web is the web_fetch tool (DESIGN §7.3): an http(s) GET of one
// URL, returned as readable text. HTML becomes markdown; plain text, JSON
// and XML pass through; other types are refused.
//
// Because a model chooses the URL, the fetcher defends against server-side
// request forgery: it resolves host names itself, refuses loopback,
// private, link-local, cloud metadata, multicast, broadcast, unspecified,
// shared (CGNAT), benchmarking, documentation and other reserved addresses
// (IPv4 and IPv6, and IPv6 forms that embed a refused IPv4 address:
// NAT64, SIIT, 6to4, Teredo), and every address of the machine's own
// network interfaces (listed again at each check), and connects to the
// very address it checked, for the first request and every redirect. A DNS
// answer that changes between the check and the connection (rebinding)
// therefore reaches nothing new.
//
// HTML is parsed with golang.org/x/net/html, the Go project's HTML5
// parser, and rendered to markdown by a small walker in this package: it
// keeps the dependency list to the Go project's own modules and lets the
// output be tuned for a model to read (main content only, no navigation,
// no scripts).
package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/tool"
)

// Name is the tool's name.
const Name = "web_fetch"

type input struct {
	URL      string `json:"url" jsonschema:"the http or https URL to fetch"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"the most characters of text to return (default 50000, at most 200000)"`
}

// New returns the web_fetch tool.
func New(opts ...Option) tool.Tool {
	f := NewFetcher(opts...)
	return tool.New(Name,
		"Fetch one http(s) URL and return it as readable text: web pages as markdown, plain text and JSON as they are. "+
			"Only public addresses are reachable. Long pages are cut at max_chars.",
		func(ctx context.Context, in input) (tool.Output, error) { return run(ctx, f, in) },
		tool.WithAccess(tool.ReadOnly),
		// The fetch's own deadline plus time to convert the page.
		tool.WithTimeout(f.cfg.timeout+5*time.Second))
}

func run(ctx context.Context, f *Fetcher, in input) (tool.Output, error) {
	if strings.TrimSpace(in.URL) == "" {
		return tool.Output{}, fmt.Errorf(`web_fetch needs "url": an http or https URL`)
	}
	if in.MaxChars < 0 || in.MaxChars > MaxMaxChars {
		return tool.Output{}, fmt.Errorf(`"max_chars" %d: use 1 to %d, or leave it out for %d`, in.MaxChars, MaxMaxChars, DefaultMaxChars)
	}
	p, err := f.Fetch(ctx, in.URL, in.MaxChars)
	if err != nil {
		return tool.Output{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", p.FinalURL)
	if p.FinalURL != p.URL {
		fmt.Fprintf(&b, "(redirected from %s)\n", p.URL)
	}
	if p.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", p.Title)
	}
	if p.Clipped {
		fmt.Fprintf(&b, "(the page is larger than %d bytes; only its start was read)\n", f.cfg.maxBytes)
	}
	b.WriteString("\n")
	if strings.TrimSpace(p.Text) == "" {
		b.WriteString("[the page has no readable text]")
	} else {
		b.WriteString(p.Text)
	}
	meta, _ := json.Marshal(map[string]any{Name: p})
	return tool.Output{Text: b.String(), Meta: meta}, nil
}
