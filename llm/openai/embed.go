package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// Embedder gets vectors from an OpenAI-compatible embeddings endpoint
// (POST {base}/embeddings), which OpenAI, Ollama, vLLM and llama.cpp's
// server speak. It is safe for concurrent use.
type Embedder struct {
	url, key, model, provider string
	client                    *http.Client
}

// EmbedderOptions configure an Embedder.
type EmbedderOptions struct {
	// BaseURL is the API's base, such as http://localhost:11434/v1;
	// empty is DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty or "none" sends none.
	APIKey string
	Model  string
	// Name names the provider in errors (default "openai").
	Name string
	// Client sends the requests (default: a client with a 2-minute
	// timeout).
	Client *http.Client
}

// maxEmbedResponse bounds an embeddings response: a hostile or broken
// server does not get to fill memory.
const maxEmbedResponse = 256 << 20

// NewEmbedder returns an embedder; the model is required.
func NewEmbedder(o EmbedderOptions) (*Embedder, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, fmt.Errorf("embeddings: no model; name one as provider:model, such as openai:text-embedding-3-small")
	}
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("embeddings: base URL %q is not http(s)", base)
	}
	e := &Embedder{url: strings.TrimRight(base, "/") + "/embeddings", key: o.APIKey, model: o.Model, provider: o.Name, client: o.Client}
	if e.provider == "" {
		e.provider = "openai"
	}
	if e.client == nil {
		// The model traffic's client (connect, TLS, header and idle
		// bounds, one shared pool), with a cap on a whole batch.
		e.client = transport.Client(transport.Timeouts{})
		e.client.Timeout = 2 * time.Minute
	}
	return e, nil
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order. An error answer is an
// *llm.Error classified as the chat adapters classify theirs (rate limits,
// keys, bad requests); an answer that does not hold one vector per text is
// an error saying so.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(embedRequest{Model: e.model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" && e.key != "none" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, e.provider, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedResponse+1))
	if err != nil {
		return nil, transportError(ctx, e.provider, err)
	}
	if len(raw) > maxEmbedResponse {
		return nil, &llm.Error{Kind: llm.TooLarge, Provider: e.provider, Message: fmt.Sprintf("the embeddings answer is over %d bytes", maxEmbedResponse)}
	}
	if resp.StatusCode/100 != 2 {
		return nil, httpError(e.provider, resp.StatusCode, resp.Header, raw)
	}
	var out embedResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("embeddings: %s answered with something that is not an embeddings response: %w", e.provider, err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("embeddings: %s answered with index %d for %d inputs", e.provider, d.Index, len(texts))
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: %s answered with an empty vector for input %d", e.provider, d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("embeddings: %s answered with %d vectors for %d inputs (input %d has none)", e.provider, len(out.Data), len(texts), i)
		}
	}
	return vecs, nil
}
