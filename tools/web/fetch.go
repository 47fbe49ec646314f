package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// Limits of one fetch (DESIGN §7.3).
const (
	DefaultTimeout      = 15 * time.Second
	DefaultMaxBytes     = 4 << 20
	DefaultMaxRedirects = 5
	DefaultMaxChars     = 50_000
	// MaxMaxChars bounds what a call may ask for, so one page cannot fill
	// the context window.
	MaxMaxChars = 200_000
)

// Option configures a Fetcher.
type Option func(*config)

type config struct {
	policy       policy
	resolver     Resolver
	timeout      time.Duration
	maxBytes     int64
	maxRedirects int
	userAgent    string
}

// AllowLoopback lets the fetcher reach loopback addresses (127.0.0.0/8,
// ::1). It exists for tests against httptest servers; never use it where a
// model chooses the URL on a machine with local services.
func AllowLoopback() Option { return func(c *config) { c.policy.allowLoopback = true } }

// WithResolver sets the resolver of host names (default net.DefaultResolver).
func WithResolver(r Resolver) Option { return func(c *config) { c.resolver = r } }

// WithTimeout sets the deadline of one fetch, redirects and body included.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMaxBytes sets how much of a body is read.
func WithMaxBytes(n int64) Option { return func(c *config) { c.maxBytes = n } }

// WithMaxRedirects sets how many redirects are followed.
func WithMaxRedirects(n int) Option { return func(c *config) { c.maxRedirects = n } }

// Fetcher gets web pages as readable text, refusing addresses that are not
// public. It is safe for concurrent use.
type Fetcher struct {
	cfg    config
	client *http.Client
}

// NewFetcher returns a fetcher with the defaults of DESIGN §7.3 changed by
// opts.
func NewFetcher(opts ...Option) *Fetcher {
	cfg := config{
		resolver:     net.DefaultResolver,
		timeout:      DefaultTimeout,
		maxBytes:     DefaultMaxBytes,
		maxRedirects: DefaultMaxRedirects,
		userAgent:    "rein-web-fetch/1 (+https://github.com/reinhq/rein)",
	}
	for _, o := range opts {
		o(&cfg)
	}
	d := newDialer(cfg.policy, cfg.resolver)
	tr := &http.Transport{
		// No proxy: a proxy would resolve the name itself, past our checks.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f := &Fetcher{cfg: cfg}
	f.client = &http.Client{Transport: tr, Timeout: cfg.timeout, CheckRedirect: f.checkRedirect}
	return f
}

// checkRedirect rechecks every hop: the count, the scheme and a literal IP
// host here; names are checked when their connection is dialled.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.cfg.maxRedirects {
		return &RedirectError{URL: via[0].URL.String(), Max: f.cfg.maxRedirects}
	}
	return f.checkURL(req.URL)
}

// RedirectError reports a fetch that was redirected too often.
type RedirectError struct {
	URL string
	Max int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("web_fetch stopped: %s redirected more than %d times", e.URL, e.Max)
}

// URLError reports a URL web_fetch does not fetch.
type URLError struct {
	URL    string
	Reason string
}

func (e *URLError) Error() string {
	return fmt.Sprintf("web_fetch cannot fetch %q: %s", e.URL, e.Reason)
}

func (f *Fetcher) checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return &URLError{URL: u.Redacted(), Reason: "only http and https URLs are fetched"}
	case u.Hostname() == "":
		return &URLError{URL: u.Redacted(), Reason: "the URL has no host"}
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		return f.cfg.policy.check(u.Hostname(), a)
	}
	return nil
}

// StatusError reports a response whose status is not a success.
type StatusError struct {
	URL    string
	Code   int
	Status string
	// Excerpt is the start of the response's text, which often says why.
	Excerpt string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("web_fetch got HTTP %s from %s", e.Status, e.URL)
	if e.Excerpt != "" {
		msg += "; the page says: " + e.Excerpt
	}
	return msg
}

// TypeError reports a response that is not text.
type TypeError struct {
	URL         string
	ContentType string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("web_fetch reads web pages and text (HTML, plain text, JSON, XML); %s is %s, which it cannot show", e.URL, e.ContentType)
}

// Page is a fetched page as text.
type Page struct {
	// URL is the requested URL; FinalURL where the redirects ended.
	URL      string `json:"url"`
	FinalURL string `json:"final_url"`
	Status   int    `json:"status"`
	// ContentType is the media type of the body, without parameters.
	ContentType string `json:"content_type"`
	Title       string `json:"title,omitempty"`
	// Text is the body as markdown (HTML) or as sent (text, JSON).
	Text string `json:"-"`
	// Chars is the length of the whole text in characters.
	Chars int `json:"chars"`
	// Truncated says Text was cut to the max_chars asked for.
	Truncated bool `json:"truncated,omitempty"`
	// Clipped says the body was larger than the byte cap and only its
	// start was read.
	Clipped bool `json:"clipped,omitempty"`
}

// Fetch gets rawURL and returns it as text of at most maxChars characters
// (DefaultMaxChars when maxChars <= 0).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxChars int) (*Page, error) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, &URLError{URL: rawURL, Reason: "not a valid URL"}
	}
	if err := f.checkURL(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &URLError{URL: u.Redacted(), Reason: err.Error()}
	}
	req.Header.Set("User-Agent", f.cfg.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()

	page := &Page{URL: u.String(), FinalURL: resp.Request.URL.String(), Status: resp.StatusCode}
	header := resp.Header.Get("Content-Type")
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if mt, k := classifyType(header, nil); header != "" && k == kindOther && ok {
		// Refused before the body is read: no point in 4 MB of a video.
		return nil, &TypeError{URL: page.FinalURL, ContentType: mt}
	}
	body, clipped, err := readCapped(resp.Body, f.cfg.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: reading %s: %w", page.FinalURL, unwrapURLError(err))
	}
	page.Clipped = clipped
	mediaType, kind := classifyType(header, body)
	page.ContentType = mediaType
	if !ok {
		e := &StatusError{URL: page.FinalURL, Code: resp.StatusCode, Status: resp.Status}
		if kind != kindOther {
			text, _ := decode(kind, header, body, resp.Request.URL)
			e.Excerpt = excerpt(text, 300)
		}
		return nil, e
	}
	if kind == kindOther {
		return nil, &TypeError{URL: page.FinalURL, ContentType: mediaType}
	}
	text, title := decode(kind, header, body, resp.Request.URL)
	page.Title = title
	page.Chars = utf8.RuneCountInString(text)
	page.Text, page.Truncated = truncate(text, maxChars)
	return page, nil
}

// unwrapURLError removes net/http's *url.Error wrapper from our own errors,
// whose text already names the URL, and keeps it around others.
func unwrapURLError(err error) error {
	var be *BlockedError
	var re *RedirectError
	var ue *URLError
	switch {
	case errors.As(err, &be):
		return be
	case errors.As(err, &re):
		return re
	case errors.As(err, &ue):
		return ue
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("web_fetch timed out: %w", err)
	}
	return err
}

// readCapped reads at most max bytes of r, and says whether there was
// more.
func readCapped(r io.Reader, max int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > max {
		return b[:max], true, nil
	}
	return b, false, nil
}

type kind int

const (
	kindOther kind = iota
	kindHTML
	kindText
	kindJSON
)

// classifyType returns the media type of a body and how it is shown; a
// missing or unreadable Content-Type is sniffed from the body.
func classifyType(header string, body []byte) (string, kind) {
	mt, _, err := mime.ParseMediaType(header)
	if header == "" || err != nil {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	mt = strings.ToLower(mt)
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return mt, kindHTML
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson":
		return mt, kindJSON
	case strings.HasPrefix(mt, "text/"),
		mt == "application/xml" || strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript" || mt == "application/x-yaml" || mt == "application/yaml" || mt == "application/toml":
		return mt, kindText
	}
	return mt, kindOther
}

// decode turns a body into text: HTML to markdown, other text decoded to
// UTF-8 from the charset it declares.
func decode(k kind, header string, body []byte, base *url.URL) (text, title string) {
	switch k {
	case kindHTML:
		r, err := charset.NewReader(bytes.NewReader(body), header)
		if err != nil {
			r = bytes.NewReader(body)
		}
		doc, err := html.Parse(r)
		if err != nil {
			// html.Parse accepts any input; only a failing reader gets here.
			return strings.ToValidUTF8(string(body), "\uFFFD"), ""
		}
		title, text = Markdown(doc, base)
		return text, title
	case kindText:
		if r, err := charset.NewReader(bytes.NewReader(body), header); err == nil {
			if b, err := io.ReadAll(r); err == nil {
				body = b
			}
		}
	}
	// JSON is UTF-8 by definition (RFC 8259).
	return strings.ToValidUTF8(string(body), "\uFFFD"), ""
}

// truncate cuts s to max characters and says so at the cut.
func truncate(s string, max int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	i, c := 0, 0
	for i = range s {
		if c == max {
			break
		}
		c++
	}
	return s[:i] + fmt.Sprintf("\n\n[truncated: showing %d of %d characters; call web_fetch again with a larger max_chars (at most %d) to read more]", max, n, MaxMaxChars), true
}

func excerpt(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
