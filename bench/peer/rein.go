package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/reinhq/rein/bench/peer/mockchat"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/openai"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

var reinEngine = engine{
	name:     "rein",
	scripted: reinScripted,
	parallel: reinParallel,
	client:   reinClient,
}

// reinNoop is the no-op tool: typed arguments, read-only.
var reinNoop = tool.New("noop", "Do nothing.", func(context.Context, struct {
	N int `json:"n"`
}) (tool.Output, error) {
	return tool.Text("ok"), nil
}, tool.WithAccess(tool.ReadOnly))

// reinHistory is a thread of n earlier rounds of one noop call each. It is
// built once per length, so that building it adds no garbage to what is
// measured; turns do not modify their history.
func reinHistory(n int) []llm.Item {
	if h, ok := reinHistories[n]; ok {
		return h
	}
	h := make([]llm.Item, 0, 1+2*n)
	h = append(h, llm.UserText("start"))
	for i := range n {
		id := "old_" + strconv.Itoa(i)
		h = append(h, llm.Item{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "noop", Args: noopArgs}}}})
		h = append(h, llm.ToolResult(llm.Result{CallID: id, Name: "noop", Content: "ok", Status: llm.ResultOK}))
	}
	reinHistories[n] = h
	return h
}

var reinHistories = map[int][]llm.Item{}

func reinScripted(history, rounds int) (turn, error) {
	var script scripted.Script
	if rounds > 1 {
		script.Rounds = append(script.Rounds, scripted.Round{
			Calls:  []scripted.Call{{Name: "noop", RawArgs: noopArgs}},
			Repeat: rounds - 1,
		})
	}
	script.Rounds = append(script.Rounds, scripted.Round{Text: answer})
	e, err := loop.New(loop.Options{
		Model:         scripted.New(script, scripted.NoHistoryCheck()),
		MaxRounds:     rounds,
		Tools:         tool.NewSet(reinNoop),
		LoopThreshold: -1,
	})
	if err != nil {
		return nil, err
	}
	return reinTurn(e, reinHistory(history), rounds), nil
}

// reinTurn runs turns on e and checks each ends with the answer after
// rounds rounds.
func reinTurn(e *loop.Engine, history []llm.Item, rounds int) turn {
	input := []llm.Item{llm.UserText("go")}
	return func(ctx context.Context) error {
		out, err := e.Run(ctx, loop.Turn{History: history, Input: input})
		if err != nil {
			return err
		}
		if out.Rounds != rounds || out.StopReason != loop.StopFinished || out.Answer != answer {
			return fmt.Errorf("rein: %d rounds, stop %s, answer %q; want %d rounds and the answer", out.Rounds, out.StopReason, out.Answer, rounds)
		}
		return nil
	}
}

// reinSleep is a read-only tool that takes d.
func reinSleep(d time.Duration) tool.Tool {
	return tool.New("slow", "Wait a while.", func(ctx context.Context, _ struct {
		I int `json:"i"`
	}) (tool.Output, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return tool.Text("done"), nil
		case <-ctx.Done():
			return tool.Output{}, ctx.Err()
		}
	}, tool.WithAccess(tool.ReadOnly))
}

func reinParallel(calls int, d time.Duration) (turn, error) {
	cs := make([]scripted.Call, calls)
	for i := range cs {
		cs[i] = scripted.Call{Name: "slow", RawArgs: `{"i":` + strconv.Itoa(i) + `}`}
	}
	script := scripted.Script{Rounds: []scripted.Round{{Calls: cs}, {Text: answer}}}
	e, err := loop.New(loop.Options{
		Model: scripted.New(script, scripted.NoHistoryCheck()),
		Tools: tool.NewSet(reinSleep(d)),
	})
	if err != nil {
		return nil, err
	}
	return reinTurn(e, nil, 2), nil
}

func reinHTTP(baseURL string, rounds int) (turn, error) {
	m := openai.NewChat(openai.Options{
		APIKey:     "k",
		BaseURL:    baseURL,
		Model:      "m",
		HTTPClient: newHTTPClient(),
	})
	e, err := loop.New(loop.Options{
		Model:         m,
		MaxRounds:     rounds,
		Tools:         tool.NewSet(reinNoop),
		LoopThreshold: -1,
	})
	if err != nil {
		return nil, err
	}
	return reinTurn(e, nil, rounds), nil
}

// reinClient starts this binary as a client process running reinHTTP
// turns (see serveClientIfChild).
func reinClient(baseURL string, rounds int) (*mockchat.Client, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), clientEnv+"="+baseURL, clientRoundsEnv+"="+strconv.Itoa(rounds))
	return mockchat.StartClient(cmd)
}

const (
	clientEnv       = "PEER_REIN_CLIENT" // the mock's API root
	clientRoundsEnv = "PEER_REIN_ROUNDS"
)

// serveClientIfChild runs the rein client protocol and exits when this
// process was started by reinClient; otherwise it returns at once.
func serveClientIfChild() {
	url := os.Getenv(clientEnv)
	if url == "" {
		return
	}
	rounds, err := strconv.Atoi(os.Getenv(clientRoundsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer: bad", clientRoundsEnv)
		os.Exit(2)
	}
	t, err := reinHTTP(url, rounds)
	if err == nil {
		err = mockchat.RunClient("rein: net/http, internal/sse, "+mockchat.Versions("github.com/tidwall/gjson"), t)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer: rein client:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// newHTTPClient is a client with a transport of its own, so the two
// engines never share connections.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}
