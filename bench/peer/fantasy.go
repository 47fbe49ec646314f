package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"charm.land/fantasy"
	"github.com/reinhq/rein/bench/peer/mockchat"
)

var fantasyEngine = engine{
	name:     "fantasy",
	scripted: fantasyScripted,
	parallel: func(calls int, d time.Duration) (turn, error) { return fantasyParallel(calls, d, true) },
	client:   fantasyClient,
}

// fantasySeqEngine is fantasy with tools made by NewAgentTool, its default,
// which runs them one at a time; only the parallel workload uses it.
var fantasySeqEngine = engine{
	name:     "fantasy, default tools",
	parallel: func(calls int, d time.Duration) (turn, error) { return fantasyParallel(calls, d, false) },
}

type noopInput struct {
	N int `json:"n"`
}

// fantasyNoop is the no-op tool. It is made parallel, fantasy's equivalent
// of a read-only tool; with one call per round that changes nothing but the
// path the call takes.
var fantasyNoop = fantasy.NewParallelAgentTool("noop", "Do nothing.",
	func(context.Context, noopInput, fantasy.ToolCall) (fantasy.ToolResponse, error) {
		return fantasy.NewTextResponse("ok"), nil
	})

// fakeModel is an in-memory fantasy.LanguageModel, the counterpart of
// rein's llm/scripted: its first toolRounds streams each carry calls calls
// of tool with args, every later stream the answer. It streams the parts
// fantasy's own providers stream for the same content: tool input start,
// delta and end, then the call, then finish (text start, delta and end,
// then finish for the answer). It ignores the prompt.
type fakeModel struct {
	toolRounds int
	calls      int
	tool, args string
	n          int // streams made so far
}

func (m *fakeModel) Stream(ctx context.Context, _ fantasy.Call) (fantasy.StreamResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := m.n
	m.n++
	if n >= m.toolRounds {
		return func(yield func(fantasy.StreamPart) bool) {
			_ = yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeTextStart, ID: "0"}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeTextDelta, ID: "0", Delta: answer}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeTextEnd, ID: "0"}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeFinish, FinishReason: fantasy.FinishReasonStop})
		}, nil
	}
	return func(yield func(fantasy.StreamPart) bool) {
		for j := range m.calls {
			id := "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(j)
			args := m.args
			if args == "" {
				args = `{"i":` + strconv.Itoa(j) + `}`
			}
			if !(yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeToolInputStart, ID: id, ToolCallName: m.tool}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeToolInputDelta, ID: id, Delta: args}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeToolInputEnd, ID: id}) &&
				yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeToolCall, ID: id, ToolCallName: m.tool, ToolCallInput: args})) {
				return
			}
		}
		yield(fantasy.StreamPart{Type: fantasy.StreamPartTypeFinish, FinishReason: fantasy.FinishReasonToolCalls})
	}, nil
}

var errStreamOnly = errors.New("fake model: streaming only")

func (m *fakeModel) Generate(context.Context, fantasy.Call) (*fantasy.Response, error) {
	return nil, errStreamOnly
}

func (m *fakeModel) GenerateObject(context.Context, fantasy.ObjectCall) (*fantasy.ObjectResponse, error) {
	return nil, errStreamOnly
}

func (m *fakeModel) StreamObject(context.Context, fantasy.ObjectCall) (fantasy.ObjectStreamResponse, error) {
	return nil, errStreamOnly
}

func (m *fakeModel) Provider() string { return "fake" }
func (m *fakeModel) Model() string    { return "fake" }

// fantasyHistory is a thread of n earlier rounds of one noop call each,
// built once per length like reinHistory.
func fantasyHistory(n int) []fantasy.Message {
	if h, ok := fantasyHistories[n]; ok {
		return h
	}
	h := make([]fantasy.Message, 0, 1+2*n)
	h = append(h, fantasy.NewUserMessage("start"))
	for i := range n {
		id := "old_" + strconv.Itoa(i)
		h = append(h,
			fantasy.Message{Role: fantasy.MessageRoleAssistant, Content: []fantasy.MessagePart{
				fantasy.ToolCallPart{ToolCallID: id, ToolName: "noop", Input: noopArgs},
			}},
			fantasy.Message{Role: fantasy.MessageRoleTool, Content: []fantasy.MessagePart{
				fantasy.ToolResultPart{ToolCallID: id, Output: fantasy.ToolResultOutputContentText{Text: "ok"}},
			}},
		)
	}
	fantasyHistories[n] = h
	return h
}

var fantasyHistories = map[int][]fantasy.Message{}

func fantasyScripted(history, rounds int) (turn, error) {
	m := &fakeModel{toolRounds: rounds - 1, calls: 1, tool: "noop", args: noopArgs}
	a := fantasy.NewAgent(m, fantasy.WithTools(fantasyNoop))
	return fantasyTurn(a, fantasyHistory(history), rounds), nil
}

// fantasyTurn runs turns through a's streaming entry point (the one crush
// uses; Generate never runs tools in parallel) and checks each ends with
// the answer after rounds steps. fantasyhttp has its own copy for the HTTP
// workload.
func fantasyTurn(a fantasy.Agent, history []fantasy.Message, rounds int) turn {
	return func(ctx context.Context) error {
		res, err := a.Stream(ctx, fantasy.AgentStreamCall{Prompt: "go", Messages: history})
		if err != nil {
			return err
		}
		if len(res.Steps) != rounds || res.Response.Content.Text() != answer {
			return fmt.Errorf("fantasy: %d steps, answer %q; want %d steps and the answer", len(res.Steps), res.Response.Content.Text(), rounds)
		}
		return nil
	}
}

type slowInput struct {
	I int `json:"i"`
}

func fantasyParallel(calls int, d time.Duration, parallel bool) (turn, error) {
	run := func(ctx context.Context, _ slowInput, _ fantasy.ToolCall) (fantasy.ToolResponse, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return fantasy.NewTextResponse("done"), nil
		case <-ctx.Done():
			return fantasy.ToolResponse{}, ctx.Err()
		}
	}
	slow := fantasy.NewAgentTool("slow", "Wait a while.", run)
	if parallel {
		slow = fantasy.NewParallelAgentTool("slow", "Wait a while.", run)
	}
	m := &fakeModel{toolRounds: 1, calls: calls, tool: "slow"}
	a := fantasy.NewAgent(m, fantasy.WithTools(slow))
	return fantasyTurn(a, nil, 2), nil
}

// fantasyClient builds the fantasyhttp module (a module of its own: see its
// doc) into a temporary directory and starts it as a client process.
func fantasyClient(url string, rounds int) (*mockchat.Client, error) {
	dir, err := os.MkdirTemp("", "peer-fantasyhttp")
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(dir, "fantasyhttp")
	build := exec.Command("go", "build", "-o", exe, ".")
	build.Dir = fantasyHTTPDir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("building %s: %v", fantasyHTTPDir, err)
	}
	c, err := mockchat.StartClient(exec.Command(exe, "-url", url, "-rounds", strconv.Itoa(rounds)))
	// The running binary needs no directory entry.
	os.RemoveAll(dir)
	return c, err
}

// fantasyHTTPDir is where the fantasyhttp module is, relative to the
// working directory (bench/peer for `go run .` and `go test`).
var fantasyHTTPDir = "fantasyhttp"
