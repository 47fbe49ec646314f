// Package web is the page of rein serve (DESIGN §9): threads in a browser,
// speaking only the documented JSON-RPC protocol over the server's
// WebSocket, so it is also the protocol's reference client. Its assets are
// plain HTML, CSS and JavaScript embedded in the binary, with no build step
// and nothing fetched from elsewhere: the page works offline.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/reinhq/rein/trace"
)

//go:embed static
var static embed.FS

// asset is one file, as stored and gzipped once at start.
type asset struct {
	body, gz []byte
	ctype    string
	etag     string
}

// assets are the page's files by URL path ("/" is index.html): the
// embedded ones, or another set a benchmark serves to compare pages in one
// run (export_test.go).
var assets atomic.Pointer[map[string]*asset]

func init() {
	m, err := load(static, "static")
	if err != nil {
		panic(fmt.Sprintf("web: embedded assets: %v", err)) // the embed is fixed at build time
	}
	assets.Store(&m)
}

// load reads the page's files under dir of fsys and gzips each once.
func load(fsys fs.FS, dir string) (map[string]*asset, error) {
	m := map[string]*asset{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		w.Write(b)
		w.Close()
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		a := &asset{body: b, gz: gz.Bytes(), ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		url := "/assets/" + strings.TrimPrefix(p, dir+"/")
		if url == "/assets/index.html" {
			url = "/"
		}
		m[url] = a
		return nil
	})
	return m, err
}

// traceScripts are the CSP hashes of the inline scripts of the trace page
// (package trace), which the page shows in a sandboxed frame: a srcdoc
// frame runs under the page's policy, and these are the only inline
// scripts it allows.
var traceScripts = func() string {
	var b strings.Builder
	trace.WriteHTML(&b, &trace.Turn{})
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(b.String(), -1) {
		sum := sha256.Sum256([]byte(m[1]))
		out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return strings.Join(out, " ")
}()

// Policy is the Content-Security-Policy of the page served at host: its
// own scripts and styles only (plus the trace frame's script by hash),
// connections only to its own WebSocket, no frames of it elsewhere.
func Policy(host string) string {
	return "default-src 'none'; script-src 'self' " + traceScripts + "; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
		"connect-src 'self' ws://" + host + " wss://" + host + "; frame-src 'self'; child-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// Has reports whether p is the path of one of the page's files.
func Has(p string) bool {
	_, ok := (*assets.Load())[p]
	return ok
}

// Serve writes the page's file at r's path, gzipped when the client takes
// it, with an ETag so a reload revalidates instead of downloading. A path
// that is not one of the page's files is 404.
func Serve(w http.ResponseWriter, r *http.Request) {
	a, ok := (*assets.Load())[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's sign-in form, which the Origin check
	// refuses (TestANamedTokenSignsInOnThePageAndSeesItsOwnThreads). No
	// other site is ever sent a referrer either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", Policy(r.Host))
	h.Set("X-Frame-Options", "DENY")
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for p := range strings.SplitSeq(v, ",") {
			name, q, _ := strings.Cut(strings.TrimSpace(p), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
				return true
			}
		}
	}
	return false
}

// Size returns the bytes of the page's files as sent to a client that
// takes gzip, and their total uncompressed (bench/RESULTS.md).
func Size() (gzipped, plain int) {
	for _, a := range *assets.Load() {
		gzipped += len(a.gz)
		plain += len(a.body)
	}
	return gzipped, plain
}
