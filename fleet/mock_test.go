package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

// jobRounds is how many model rounds each job's turn has: two rounds
// that read a file, then the answer.
const jobRounds = 3

// provider is an OpenAI chat-completions server that every node of a fleet
// asks: it answers each request by what the request holds (the job named
// by the turn's input, and how many replies of it the history carries),
// not by the order requests come in, so any node may ask for any round of
// any job. It counts, per job and round, the requests and the replies it
// sent to their end, so a test can tell a round run twice from a round
// requested again because its stream was cut.
type provider struct {
	*httptest.Server
	// delay is the pause between the chunks of a reply: a reply of
	// chunks pieces takes chunks × delay, room for a kill to land in.
	delay  time.Duration
	chunks int

	mu        sync.Mutex
	requests  map[string]int
	completed map[string]int
	// started holds when each (job, round) was last asked for; finished
	// when its reply was last sent to its end.
	started, finished map[string]time.Time
}

func newProvider(t *testing.T, delay time.Duration, chunks int) *provider {
	p := &provider{delay: delay, chunks: chunks, requests: map[string]int{}, completed: map[string]int{}, started: map[string]time.Time{}, finished: map[string]time.Time{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// key names a job's round.
func key(job string, round int) string { return fmt.Sprintf("%s/r%d", job, round) }

// counts returns how many times a job's round was asked for and answered
// to its end.
func (p *provider) counts(job string, round int) (requests, completed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[key(job, round)], p.completed[key(job, round)]
}

// askedAt returns when a job's round was last asked for.
func (p *provider) askedAt(job string, round int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started[key(job, round)]
}

// jobOf finds the job a request is for (its last input "job-…") and its
// round: the replies the history holds after that input.
func jobOf(items []llm.Item) (job string, round int) {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Role == llm.RoleUser && strings.HasPrefix(items[i].Text(), "job-") {
			job = strings.Fields(items[i].Text())[0]
			for _, it := range items[i+1:] {
				if it.Role == llm.RoleAssistant {
					round++
				}
			}
			return job, round
		}
	}
	return "", 0
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	items, err := testkit.WireHistory(false, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := llm.CheckHistory(items); err != nil {
		http.Error(w, "the history breaks an invariant: "+err.Error(), http.StatusBadRequest)
		return
	}
	job, round := jobOf(items)
	if job == "" {
		http.Error(w, "no job in the request", http.StatusBadRequest)
		return
	}
	k := key(job, round)
	p.mu.Lock()
	p.requests[k]++
	p.started[k] = time.Now()
	p.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	id := "chatcmpl-" + strings.ReplaceAll(k, "/", "-")
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := io.WriteString(w, "data: "+string(b)+"\n\n"); err != nil {
			return false
		}
		return http.NewResponseController(w).Flush() == nil
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "model": "mock",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	// Every reply says which round of which job it is: the history shows
	// each round once.
	text := fmt.Sprintf("[%s] ", k)
	if round == jobRounds-1 {
		text += "done " + job
	} else {
		text += "reading"
	}
	for i := range p.chunks {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(p.delay):
		}
		piece := "."
		if i == 0 {
			piece = text
		}
		if !send(chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	finish := "stop"
	if round < jobRounds-1 {
		finish = "tool_calls"
		args := `{"path":"a.txt"}`
		if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_" + strings.ReplaceAll(k, "/", "_"), "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": args}}}}, nil)) {
			return
		}
	}
	if !send(chunk(map[string]any{}, finish)) {
		return
	}
	send(map[string]any{"id": id, "object": "chat.completion.chunk", "model": "mock", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil {
		return
	}
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	p.mu.Lock()
	p.completed[k]++
	p.finished[k] = time.Now()
	p.mu.Unlock()
}

// answeredAt returns when a job's round was last answered to its end.
func (p *provider) answeredAt(job string, round int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finished[key(job, round)]
}
