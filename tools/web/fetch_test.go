package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/tool"
)

// fakeResolver answers from a table, or from answer when set, and counts
// the lookups of each name.
type fakeResolver struct {
	mu     sync.Mutex
	table  map[string][]string
	answer func(host string, n int) []string
	calls  map[string]int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[host]++
	names := r.table[host]
	if r.answer != nil {
		names = r.answer(host, r.calls[host])
	}
	if names == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, n := range names {
		out = append(out, netip.MustParseAddr(n))
	}
	return out, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// countingServer returns a test server that counts its requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func wantBlocked(t *testing.T, err error, class string) {
	t.Helper()
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("err %v (%T), want a *BlockedError", err, err)
	}
	if be.Class != class {
		t.Errorf("refused as %q, want %q (%v)", be.Class, class, err)
	}
}

func TestFetchRefusesForbiddenAddresses(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	f := NewFetcher(WithResolver(&fakeResolver{}))
	for _, tc := range []struct {
		url   string
		class string
	}{
		{srv.URL, "loopback"},
		{fmt.Sprintf("http://[::1]:%d/", port), "loopback"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), "loopback"},
		{"http://10.0.0.1/", "private (RFC 1918)"},
		{"http://10.255.3.4:8080/admin", "private (RFC 1918)"},
		{"http://192.168.0.1/", "private (RFC 1918)"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata"},
		{"http://100.64.0.1/", "shared (CGNAT, 100.64.0.0/10)"},
		{"http://0.0.0.0/", "unspecified"},
		{"http://224.0.0.1/", "multicast or broadcast"},
		{"https://[fe80::1]/", "link-local"},
	} {
		_, err := f.Fetch(context.Background(), tc.url, 0)
		wantBlocked(t, err, tc.class)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestFetchRefusesNamesThatResolveToForbiddenAddresses(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	r := &fakeResolver{table: map[string][]string{
		"local.example": {"127.0.0.1"},
		"v6.example":    {"::1"},
		"intra.example": {"10.1.2.3"},
		"meta.example":  {"169.254.169.254"},
		// One forbidden answer among public ones refuses the name.
		"mixed.example": {"93.184.216.34", "192.168.1.10"},
	}}
	f := NewFetcher(WithResolver(r))
	for host, class := range map[string]string{
		"local.example": "loopback",
		"v6.example":    "loopback",
		"intra.example": "private (RFC 1918)",
		"meta.example":  "cloud metadata",
		"mixed.example": "private (RFC 1918)",
	} {
		_, err := f.Fetch(context.Background(), fmt.Sprintf("http://%s:%d/", host, port), 0)
		wantBlocked(t, err, class)
		if !strings.Contains(err.Error(), host) {
			t.Errorf("%s: the refusal does not name the host: %v", host, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times", n)
	}
	_, err := f.Fetch(context.Background(), "http://nowhere.example/", 0)
	if err == nil || !strings.Contains(err.Error(), "could not resolve nowhere.example") {
		t.Errorf("unresolvable name: %v", err)
	}
}

// TestFetchDialsTheAddressItChecked shows the DNS rebinding defence: the
// name is resolved once per connection and the connection goes to the
// checked address, so an answer that changes after the check is never
// used.
func TestFetchDialsTheAddressItChecked(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "pinned")
	})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	r := &fakeResolver{answer: func(host string, n int) []string {
		if n == 1 {
			return []string{"127.0.0.1"}
		}
		return []string{"10.0.0.1"} // the rebinding answer
	}}
	f := NewFetcher(AllowLoopback(), WithResolver(r))
	p, err := f.Fetch(context.Background(), fmt.Sprintf("http://rebind.example:%d/", port), 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Text != "pinned" {
		t.Errorf("text %q", p.Text)
	}
	if n := r.count("rebind.example"); n != 1 {
		t.Errorf("resolved %d times, want once", n)
	}
	// A new connection resolves again, and is checked again.
	f2 := NewFetcher(AllowLoopback(), WithResolver(r))
	_, err = f2.Fetch(context.Background(), fmt.Sprintf("http://rebind.example:%d/", port), 0)
	wantBlocked(t, err, "private (RFC 1918)")
}

func TestFetchRechecksEveryRedirect(t *testing.T) {
	r := &fakeResolver{table: map[string][]string{"intra.example": {"10.9.9.9"}}}
	for _, tc := range []struct {
		to    string
		class string
	}{
		{"http://10.0.0.1/", "private (RFC 1918)"},
		{"http://169.254.169.254/latest/meta-data/iam/", "cloud metadata"},
		{"http://[fd00:ec2::254]/", "cloud metadata"},
		{"http://172.20.0.1:8080/", "private (RFC 1918)"},
		{"http://intra.example/", "private (RFC 1918)"},
	} {
		t.Run(tc.to, func(t *testing.T) {
			srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tc.to, http.StatusFound)
			})
			f := NewFetcher(AllowLoopback(), WithResolver(r))
			_, err := f.Fetch(context.Background(), srv.URL+"/start", 0)
			wantBlocked(t, err, tc.class)
			if hits.Load() != 1 {
				t.Errorf("the first hop was requested %d times", hits.Load())
			}
		})
	}
	t.Run("scheme", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		})
		_, err := NewFetcher(AllowLoopback()).Fetch(context.Background(), srv.URL, 0)
		var ue *URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "only http and https") {
			t.Errorf("err %v", err)
		}
	})
}

func TestFetchFollowsAtMostFiveRedirects(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/r/%d", &n)
		if n == 0 {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	f := NewFetcher(AllowLoopback())
	p, err := f.Fetch(context.Background(), srv.URL+"/r/5", 0)
	if err != nil || p.Text != "arrived" || !strings.HasSuffix(p.FinalURL, "/r/0") {
		t.Fatalf("five redirects: %+v %v", p, err)
	}
	_, err = f.Fetch(context.Background(), srv.URL+"/r/6", 0)
	var re *RedirectError
	if !errors.As(err, &re) || re.Max != 5 {
		t.Errorf("six redirects: %v", err)
	}
}

// TestFetchRefusesTheMachinesOwnAddresses: a name, a literal address or a
// redirect that leads to one of the machine's own interface addresses is
// refused before anything is sent, however public the address looks.
func TestFetchRefusesTheMachinesOwnAddresses(t *testing.T) {
	own := &ownAddrs{}
	own.set("93.184.216.34")
	r := &fakeResolver{table: map[string][]string{"me.example": {"93.184.216.34"}}}
	f := NewFetcher(AllowLoopback(), WithResolver(r), withOwn(own))
	for _, u := range []string{"http://93.184.216.34/", "http://me.example/", "http://[::ffff:93.184.216.34]/"} {
		_, err := f.Fetch(context.Background(), u, 0)
		wantBlocked(t, err, ownClass)
	}
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://me.example/admin", http.StatusFound)
	})
	_, err := f.Fetch(context.Background(), srv.URL+"/start", 0)
	wantBlocked(t, err, ownClass)
	if hits.Load() != 1 {
		t.Errorf("the first hop was requested %d times", hits.Load())
	}
}

func TestFetchReadsAtMostFourMegabytes(t *testing.T) {
	line := strings.Repeat("x", 1023) + "\n"
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for range 5 << 10 { // 5 MB
			if _, err := fmt.Fprint(w, line); err != nil {
				return
			}
		}
	})
	p, err := NewFetcher(AllowLoopback()).Fetch(context.Background(), srv.URL, MaxMaxChars)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Clipped || p.Chars != DefaultMaxBytes {
		t.Errorf("clipped %v, %d characters read; want the first %d", p.Clipped, p.Chars, DefaultMaxBytes)
	}
	if !p.Truncated || !strings.Contains(p.Text, "[truncated: showing 200000 of 4194304 characters") {
		t.Errorf("truncated %v, text ends %q", p.Truncated, p.Text[len(p.Text)-200:])
	}
}

func TestFetchTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	start := time.Now()
	_, err := NewFetcher(AllowLoopback(), WithTimeout(100*time.Millisecond)).Fetch(context.Background(), srv.URL, 0)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

const page = `<!doctype html>
<html><head><title> The  Page </title><style>body{color:red}</style>
<script>alert("no")</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main>
<h1>Hello <em>world</em></h1>
<p>First   paragraph with a <a href="/docs/intro">relative link</a> and <strong>bold</strong> text.</p>
<ul><li>one</li><li>two <code>x := 1</code></li></ul>
<pre><code class="language-go">func main() {
	fmt.Println("hi")
}
</code></pre>
<p hidden>not shown</p>
</main>
<footer>footer text</footer>
</body></html>`

func TestFetchConvertsHTMLToMarkdown(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	p, err := NewFetcher(AllowLoopback()).Fetch(context.Background(), srv.URL+"/docs/", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Hello _world_\n\n" +
		"First paragraph with a [relative link](" + srv.URL + "/docs/intro) and **bold** text.\n\n" +
		"- one\n- two `x := 1`\n\n" +
		"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```"
	if p.Text != want {
		t.Errorf("text:\n%s\n--- want:\n%s", p.Text, want)
	}
	if p.Title != "The Page" || p.ContentType != "text/html" || p.Status != 200 || p.Truncated || p.Clipped {
		t.Errorf("page %+v", p)
	}
}

func TestFetchPassesTextThroughAndRefusesOtherTypes(t *testing.T) {
	for _, tc := range []struct {
		name, ctype string
		body        []byte
		want        string // the text, or the error's substring when fails
		fails       bool
	}{
		{"plain text", "text/plain", []byte("  keep   my\n spacing "), "  keep   my\n spacing ", false},
		{"json", "application/json", []byte(`{"a": [1, 2]}`), `{"a": [1, 2]}`, false},
		{"problem json", "application/problem+json", []byte(`{"title":"x"}`), `{"title":"x"}`, false},
		{"xml", "application/xml", []byte(`<a>b</a>`), `<a>b</a>`, false},
		{"latin-1 text", "text/plain; charset=iso-8859-1", []byte("caf\xe9"), "café", false},
		{"sniffed html", "", []byte("<html><body><p>sniffed</p></body></html>"), "sniffed", false},
		{"pdf", "application/pdf", []byte("%PDF-1.7"), "application/pdf, which it cannot show", true},
		{"image", "image/png", []byte("\x89PNG"), "image/png, which it cannot show", true},
		{"sniffed binary", "", []byte{0, 1, 2, 3, 0xff, 0xfe}, "application/octet-stream, which it cannot show", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.Write(tc.body)
			})
			p, err := NewFetcher(AllowLoopback()).Fetch(context.Background(), srv.URL, 0)
			if tc.fails {
				var te *TypeError
				if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err %v, want a *TypeError saying %q", err, tc.want)
				}
				return
			}
			if err != nil || p.Text != tc.want {
				t.Errorf("text %q err %v, want %q", p.Text, err, tc.want)
			}
		})
	}
}

func TestFetchReportsHTTPErrorsWithTheirText(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such   page here", http.StatusNotFound)
	})
	_, err := NewFetcher(AllowLoopback()).Fetch(context.Background(), srv.URL+"/missing", 0)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || !strings.Contains(err.Error(), "HTTP 404 Not Found") ||
		!strings.Contains(err.Error(), "the page says: no such page here") {
		t.Errorf("err %v", err)
	}
}

func TestFetchRefusesURLsThatAreNotHTTP(t *testing.T) {
	f := NewFetcher()
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://x", "http://", "::not a url", "/relative/path"} {
		_, err := f.Fetch(context.Background(), u, 0)
		var ue *URLError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err %v, want a *URLError", u, err)
		}
	}
}

func TestWebFetchToolReturnsTextTitleAndTruncationMarker(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>T</title><p>%s</p>", strings.Repeat("é", 120))
	})
	wf := New(AllowLoopback())
	if s := wf.Spec(); s.Name != "web_fetch" || s.Access != tool.ReadOnly {
		t.Errorf("spec %+v", s)
	}
	args, _ := json.Marshal(map[string]any{"url": srv.URL + "/a", "max_chars": 100})
	out, err := wf.Run(context.Background(), tool.Call{Name: Name, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "/a\nTitle: T\n\n" + strings.Repeat("é", 100) +
		"\n\n[truncated: showing 100 of 120 characters; call web_fetch again with a larger max_chars (at most 200000) to read more]"
	if out.Text != want {
		t.Errorf("text:\n%q\nwant\n%q", out.Text, want)
	}
	var meta map[string]map[string]any
	if err := json.Unmarshal(out.Meta, &meta); err != nil || meta["web_fetch"]["truncated"] != true {
		t.Errorf("meta %s %v", out.Meta, err)
	}

	for _, bad := range []map[string]any{
		{"url": ""},
		{"url": srv.URL, "max_chars": MaxMaxChars + 1},
		{"url": "http://169.254.169.254/"},
	} {
		args, _ := json.Marshal(bad)
		if _, err := New().Run(context.Background(), tool.Call{Name: Name, Args: args}); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// The default fetcher must not be able to reach a loopback test server
// even through the tool.
func TestWebFetchToolRefusesLoopbackByDefault(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	u, _ := url.Parse(srv.URL)
	args, _ := json.Marshal(map[string]any{"url": "http://localhost:" + u.Port() + "/"})
	_, err := New().Run(context.Background(), tool.Call{Name: Name, Args: args})
	wantBlocked(t, err, "loopback")
	if hits.Load() != 0 {
		t.Error("reached the server")
	}
}
