package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
)

func TestEmbedderSpeaksTheEmbeddingsEndpoint(t *testing.T) {
	var got struct {
		path, auth string
		body       map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth = r.URL.Path, r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got.body)
		// Out of order, as a server may answer: the index decides.
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0,1]},{"object":"embedding","index":0,"embedding":[1,0]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`)
	}))
	defer srv.Close()
	e, err := openai.NewEmbedder(openai.EmbedderOptions{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(t.Context(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got.path != "/v1/embeddings" || got.auth != "Bearer sk-test" || got.body["model"] != "text-embedding-3-small" || got.body["encoding_format"] != "float" {
		t.Errorf("request %+v", got)
	}
	if in, _ := got.body["input"].([]any); len(in) != 2 || in[0] != "a" {
		t.Errorf("input %v", got.body["input"])
	}
	if len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Errorf("vectors %v", vecs)
	}
}

func TestEmbedderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       error
		text       string
	}{
		{"a bad key", `{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}`, 401, llm.Unauthorized, "Incorrect API key"},
		{"a rate limit", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429, llm.RateLimited, "slow down"},
		{"too few vectors", `{"data":[{"index":0,"embedding":[1]}]}`, 200, nil, "1 vectors for 2 inputs"},
		{"an index out of range", `{"data":[{"index":0,"embedding":[1]},{"index":5,"embedding":[1]}]}`, 200, nil, "index 5"},
		{"an empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`, 200, nil, "empty vector"},
		{"not JSON", `<html>`, 200, nil, "not an embeddings response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			e, _ := openai.NewEmbedder(openai.EmbedderOptions{BaseURL: srv.URL, Model: "m"})
			_, err := e.Embed(t.Context(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.text) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("err %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
	if _, err := openai.NewEmbedder(openai.EmbedderOptions{}); err == nil {
		t.Error("no model: no error")
	}
	if _, err := openai.NewEmbedder(openai.EmbedderOptions{Model: "m", BaseURL: "file:///etc"}); err == nil {
		t.Error("a file URL: no error")
	}
}
