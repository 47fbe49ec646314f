package web_test

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/web"
)

func serve(t *testing.T, path string, h http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8765"+path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	web.Serve(w, req)
	return w.Result()
}

func TestServeSendsGzipAndRevalidates(t *testing.T) {
	plain := serve(t, "/assets/md.js", nil)
	body, _ := io.ReadAll(plain.Body)
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || !strings.Contains(string(body), "export function render") {
		t.Fatalf("plain: %d %q %.60q", plain.StatusCode, plain.Header.Get("Content-Encoding"), body)
	}
	gz := serve(t, "/assets/md.js", http.Header{"Accept-Encoding": {"br, gzip;q=0.8"}})
	if gz.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q", gz.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != string(body) {
		t.Error("the gzipped file is not the file")
	}
	if no := serve(t, "/assets/md.js", http.Header{"Accept-Encoding": {"gzip;q=0"}}); no.Header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 got gzip")
	}
	etag := plain.Header.Get("ETag")
	if again := serve(t, "/assets/md.js", http.Header{"If-None-Match": {etag}}); etag == "" || again.StatusCode != http.StatusNotModified {
		t.Errorf("revalidating with ETag %q: %d, want 304", etag, again.StatusCode)
	}
	if missing := serve(t, "/assets/nothing.js", nil); missing.StatusCode != http.StatusNotFound {
		t.Errorf("a file that is not the page's: %d, want 404", missing.StatusCode)
	}
}

// TestThePolicyAllowsOnlyThePagesScriptsAndTheTraces: no inline script
// but the trace page's, by hash, and connections only to the page's host.
func TestThePolicyAllowsOnlyThePagesScriptsAndTheTraces(t *testing.T) {
	var b strings.Builder
	if err := trace.WriteHTML(&b, &trace.Turn{ID: "turn_1"}); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatal("the trace page has no inline script")
	}
	sum := sha256.Sum256([]byte(m[1]))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	csp := serve(t, "/", nil).Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self' " + hash + ";", "connect-src 'self' ws://127.0.0.1:8765 wss://127.0.0.1:8765;", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
	_, script, _ := strings.Cut(csp, "script-src")
	script, _, _ = strings.Cut(script, ";")
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(script, "unsafe-inline") {
		t.Errorf("policy %q allows unsafe scripts", csp)
	}
}
