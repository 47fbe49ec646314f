package rein_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/reinhq/rein"
)

// Example is the README's "Using it as a library", as written (a test
// checks the two agree): the model comes from a spec and a key, the tool is
// a function of typed arguments, and nothing but rein is imported. It
// needs a key and the network, so it is compiled, not run; Example_offline
// runs the same code against a scripted model.
func Example() {
	ctx := context.Background()
	model, err := rein.OpenModel("openai:gpt-5-mini", rein.ModelOptions{Key: os.Getenv("OPENAI_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	weather := rein.NewTool("get_weather", "Current weather of a city.",
		func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (rein.ToolOutput, error) {
			return rein.Text("40 C"), nil
		}, rein.WithAccess(rein.ReadOnly))

	agent, err := rein.New(rein.Options{Model: model, Tools: []rein.Tool{weather}})
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close(ctx)
	out, err := agent.Run(ctx, "Weather in Shanghai and Beijing?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Status, out.StopReason, out.Answer)
}

// Example_offline is Example against a scripted model (testdata/weather.yaml:
// two parallel calls, then the answer), so it runs anywhere. Events follow
// the turn as it runs.
func Example_offline() {
	ctx := context.Background()
	model, err := rein.OpenModel("scripted:testdata/weather.yaml", rein.ModelOptions{})
	if err != nil {
		log.Fatal(err)
	}
	weather := rein.NewTool("get_weather", "Current weather of a city.",
		func(ctx context.Context, in struct {
			City string `json:"city"`
		}) (rein.ToolOutput, error) {
			return rein.Text("40 C in " + in.City), nil
		}, rein.WithAccess(rein.ReadOnly))

	calls := 0
	agent, err := rein.New(rein.Options{
		Model: model,
		Tools: []rein.Tool{weather},
		Events: rein.EventFunc(func(e rein.Event) {
			if e.Type == rein.EventCallCompleted {
				calls++
			}
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close(ctx)
	out, err := agent.Run(ctx, "Weather in Shanghai and Beijing?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Status, out.StopReason, out.Answer)
	fmt.Println(calls, "calls in", out.Rounds, "rounds; completed:", out.Status == rein.StatusCompleted)
	// Output:
	// completed finished Shanghai and Beijing are both at 40 C.
	// 2 calls in 2 rounds; completed: true
}
