// Command fantasyhttp is the fantasy side of the peer benchmark's HTTP
// workload: 50-round turns through charm.land/fantasy and its OpenAI
// provider against the mock Chat Completions server. The coordinator in
// bench/peer builds and starts it and drives it through the mockchat client
// protocol.
//
// It is a module of its own because fantasy v0.41.2's OpenAI provider
// builds only against the openai-go releases of its own go.mod (v3.50.x),
// while rein's adapter needs a newer one; one binary can hold only one.
//
// Usage:
//
//	fantasyhttp -url http://127.0.0.1:PORT/v1 [-rounds 50]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openai"
	"github.com/reinhq/rein/bench/peer/mockchat"
)

func main() {
	url := flag.String("url", "", "the API root of the mock server, such as http://127.0.0.1:1234/v1")
	rounds := flag.Int("rounds", 50, "rounds per turn, as the mock server serves them")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "fantasyhttp: -url is required")
		os.Exit(2)
	}
	t, err := newTurn(*url, *rounds)
	if err == nil {
		err = mockchat.RunClient("fantasy: "+mockchat.Versions("charm.land/fantasy", "github.com/openai/openai-go/v3"), t)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fantasyhttp:", err)
		os.Exit(1)
	}
}

type noopInput struct {
	N int `json:"n"`
}

// noop is the no-op tool, made parallel: fantasy's equivalent of a
// read-only tool.
var noop = fantasy.NewParallelAgentTool("noop", "Do nothing.",
	func(context.Context, noopInput, fantasy.ToolCall) (fantasy.ToolResponse, error) {
		return fantasy.NewTextResponse("ok"), nil
	})

// newTurn returns a function that runs one turn against the server at url
// through the agent's streaming entry point, and checks it took rounds
// steps and ended with the answer.
func newTurn(url string, rounds int) (func(context.Context) error, error) {
	p, err := openai.New(
		openai.WithBaseURL(url),
		openai.WithAPIKey("k"),
		openai.WithHTTPClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}),
	)
	if err != nil {
		return nil, err
	}
	m, err := p.LanguageModel(context.Background(), "m")
	if err != nil {
		return nil, err
	}
	a := fantasy.NewAgent(m, fantasy.WithTools(noop))
	return func(ctx context.Context) error {
		res, err := a.Stream(ctx, fantasy.AgentStreamCall{Prompt: "go"})
		if err != nil {
			return err
		}
		if len(res.Steps) != rounds || res.Response.Content.Text() != mockchat.Answer {
			return fmt.Errorf("fantasy: %d steps, answer %q; want %d steps and the answer", len(res.Steps), res.Response.Content.Text(), rounds)
		}
		return nil
	}, nil
}
