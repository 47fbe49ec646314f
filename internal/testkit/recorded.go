package testkit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Recording is one go-vcr cassette: real HTTP exchanges recorded against a
// live provider, replayed in order.
type Recording struct {
	Path         string
	Interactions []Interaction `yaml:"interactions"`
}

// Interaction is one recorded request and its response.
type Interaction struct {
	Request  RecordedRequest  `yaml:"request"`
	Response RecordedResponse `yaml:"response"`
}

// RecordedRequest is what the recording client sent.
type RecordedRequest struct {
	Method  string              `yaml:"method"`
	URL     string              `yaml:"url"`
	Headers map[string][]string `yaml:"headers"`
	Body    string              `yaml:"body"`
}

// RecordedResponse is what the provider answered; a streamed body is the
// SSE text verbatim.
type RecordedResponse struct {
	Code    int                 `yaml:"code"`
	Headers map[string][]string `yaml:"headers"`
	Body    string              `yaml:"body"`
}

// LoadRecording reads a go-vcr YAML file.
func LoadRecording(path string) (*Recording, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := yaml.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	return &r, nil
}

// RecordedDir returns the shared folder of recorded traffic,
// ../shared/testdata/recorded next to the repository root, found by walking
// up from the working directory to go.mod. ok is false when it is absent, as
// on a machine outside this workplace.
func RecordedDir() (dir string, ok bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = filepath.Join(d, "..", "shared", "testdata", "recorded")
			st, err := os.Stat(dir)
			return dir, err == nil && st.IsDir()
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// Replayer serves the responses of a recording in order and keeps the
// bodies of the requests it received.
type Replayer struct {
	*httptest.Server
	rec *Recording

	mu       sync.Mutex
	requests [][]byte
	paths    []string
}

// ErrReplayExhausted is reported (as a 599 response) for a request beyond
// the recorded ones.
var ErrReplayExhausted = errors.New("testkit: more requests than recorded interactions")

// NewReplayer starts a server replaying rec. Close it when done.
func NewReplayer(rec *Recording) *Replayer {
	r := &Replayer{rec: rec}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *Replayer) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.requests)
	r.requests = append(r.requests, body)
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	if n >= len(r.rec.Interactions) {
		http.Error(w, ErrReplayExhausted.Error(), 599)
		return
	}
	resp := r.rec.Interactions[n].Response
	for k, vs := range resp.Headers {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue // the recorded body is decoded and written whole
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	code := resp.Code
	if code == 0 {
		code = http.StatusOK
	}
	w.WriteHeader(code)
	io.WriteString(w, resp.Body)
}

// Requests returns the bodies received so far, in order.
func (r *Replayer) Requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.requests...)
}

// Paths returns the URL paths received so far, in order.
func (r *Replayer) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}
