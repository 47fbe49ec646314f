package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode"
)

// EmbedServer is a mock of an OpenAI-compatible embeddings endpoint (POST
// /v1/embeddings, the request and response shapes of OpenAI's API, which
// Ollama, vLLM and llama.cpp also speak). Its vectors are deterministic:
// each word is mapped to its concept (Concepts; a word without one is its
// own concept), and each concept adds ±1 to one of Dims dimensions chosen
// by hashing it. Texts that share concepts, in whatever words, point the
// same way: a stand-in for a model that knows synonyms, no more.
type EmbedServer struct {
	*httptest.Server
	// Dims is the vectors' length.
	Dims int
	// Concepts maps a lowercase word to its concept.
	Concepts map[string]string

	mu sync.Mutex
	// Requests counts embeddings requests; Inputs the texts embedded.
	requests, inputs int
	// Fail, when set, is the status every request is answered with.
	fail int
}

// NewEmbedServer starts a mock embeddings server; Close it when done.
func NewEmbedServer(dims int, concepts map[string]string) *EmbedServer {
	s := &EmbedServer{Dims: dims, Concepts: concepts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is what a client is given: the server's URL with /v1.
func (s *EmbedServer) BaseURL() string { return s.URL + "/v1" }

// Counts returns the requests and inputs served so far.
func (s *EmbedServer) Counts() (requests, inputs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.inputs
}

// FailWith makes every later request fail with status (0: succeed again),
// with an OpenAI-shaped error body.
func (s *EmbedServer) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

func (s *EmbedServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil || req.Model == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"bad request: %v","type":"invalid_request_error"}}`, err)
		return
	}
	var inputs []string
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"input must be a string or an array of strings","type":"invalid_request_error"}}`)
			return
		}
		inputs = []string{one}
	}
	s.mu.Lock()
	fail := s.fail
	s.requests++
	s.inputs += len(inputs)
	s.mu.Unlock()
	if fail != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail)
		if fail == http.StatusTooManyRequests {
			io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		io.WriteString(w, `{"error":{"message":"mock failure","type":"server_error","code":"mock"}}`)
		return
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model}
	for i, text := range inputs {
		out.Data = append(out.Data, datum{Object: "embedding", Index: i, Embedding: s.Vector(text)})
		n := len(strings.Fields(text))
		out.Usage.PromptTokens += n
		out.Usage.TotalTokens += n
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// Vector is the embedding of text.
func (s *EmbedServer) Vector(text string) []float32 {
	v := make([]float32, s.Dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if embedStop[w] {
			continue
		}
		c := w
		if k, ok := s.Concepts[w]; ok {
			c = k
		}
		h := fnv.New64a()
		h.Write([]byte(c))
		x := h.Sum64()
		sign := float32(1)
		if x&1 == 1 {
			sign = -1
		}
		v[(x>>1)%uint64(s.Dims)] += sign
	}
	// A text of stop words only still has a direction.
	v[0] += 0.01
	return v
}

var embedStop = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a an and are as at be by can do does for from has have how i in is it its
		me my of on or our so that the their them then there these this to us was we were what when where which
		who why will with would you your not no one each all every than into`) {
		m[w] = true
	}
	return m
}()

// ReadConcepts reads a concept list: one concept per line, "name: word
// word …"; blank lines and # comments are skipped.
func ReadConcepts(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, words, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("concepts line %d: want \"name: word word …\"", n)
		}
		for w := range strings.FieldsSeq(strings.ToLower(words)) {
			out[w] = strings.TrimSpace(name)
		}
	}
	return out, sc.Err()
}
