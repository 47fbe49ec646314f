package rein_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein"
)

// TestOpenModelSendsTheExplicitKey: the key given to OpenModel is the one
// the provider sends, whatever the environment holds.
func TestOpenModelSendsTheExplicitKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "from-the-environment")
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization"):
		default:
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
		_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	m, err := rein.OpenModel("openai-chat:m", rein.ModelOptions{Key: "explicit-key", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := rein.New(rein.Options{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	out, err := agent.Run(context.Background(), "hello")
	if err != nil || out.Answer != "hi" {
		t.Fatalf("turn: %v, answer %q", err, out.Answer)
	}
	if a := <-got; a != "Bearer explicit-key" {
		t.Fatalf("Authorization %q; want the explicit key", a)
	}
}

func TestOpenModelErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	for _, tc := range []struct {
		spec, want string
	}{
		// A bare name resolves where it tells its provider, and only there.
		{"qwen3", "want PROVIDER:MODEL"},
		{"gpt-5-mini", "openai:gpt-5-mini: OPENAI_API_KEY is not set"},
		{"nosuch:model", "nosuch"},
		{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY is not set"},
		{"scripted:testdata/none.yaml", "none.yaml"},
	} {
		_, err := rein.OpenModel(tc.spec, rein.ModelOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenModel(%q): %v; want an error saying %q", tc.spec, err, tc.want)
		}
	}
}

// TestReadmeLibrarySectionIsTheExample: the README's library code is
// Example's body, line for line, so what the README shows compiles.
func TestReadmeLibrarySectionIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := regexp.MustCompile("(?s)## Using it as a library\n.*?```go\n(.*?)```").FindSubmatch(readme)
	if sec == nil {
		t.Fatal("README has no Go block under \"Using it as a library\"")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile("(?s)\nfunc Example\\(\\) \\{\n(.*?)\n\\}\n").FindSubmatch(src)
	if body == nil {
		t.Fatal("example_test.go has no func Example")
	}
	lines := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	want, got := lines(body[1]), lines(sec[1])
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("README's library code differs from Example in example_test.go; make them the same.\nREADME:\n%s\n\nExample:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
