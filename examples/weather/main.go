// Command weather is the weather assistant of rein's seed documents, as a
// library example: one get_weather tool with fixed, made-up data (an
// example, not a weather service), and two questions:
//
//   - "Shanghai and Beijing": two independent lookups, answered with two
//     parallel calls in one round;
//   - "if it is raining in Shenzhen check Beijing, otherwise Shanghai": the
//     second lookup depends on the first, so it takes two rounds.
//
// It runs offline with the scripted model, which plays the model's part and
// checks that it was given the right tool results.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/tool"
)

// weatherInput is get_weather's input.
type weatherInput struct {
	City string `json:"city" jsonschema:"the city, in English, e.g. Shanghai"`
}

// forecasts is fixed example data.
var forecasts = map[string]string{
	"Shanghai": "Shanghai: 28 °C, cloudy",
	"Beijing":  "Beijing: 22 °C, sunny",
	"Shenzhen": "Shenzhen: 26 °C, raining",
}

// lookupDelay stands in for a slow weather service, so the parallel round
// is visible in the timings.
var lookupDelay = 200 * time.Millisecond

// WeatherTool returns the example get_weather tool.
func WeatherTool() rein.Tool {
	return tool.New("get_weather", "Get the current weather of one city (example data).",
		func(ctx context.Context, in weatherInput) (tool.Output, error) {
			select {
			case <-time.After(lookupDelay):
			case <-ctx.Done():
				return tool.Output{}, ctx.Err()
			}
			f, ok := forecasts[in.City]
			if !ok {
				return tool.Output{Text: fmt.Sprintf("no data for %q; known cities: Shanghai, Beijing, Shenzhen", in.City), Failed: true}, nil
			}
			return tool.Output{Text: f}, nil
		}, tool.WithAccess(tool.ReadOnly))
}

// Parallel is the script of the first question: both lookups in one round.
var Parallel = scripted.Script{Rounds: []scripted.Round{
	{Text: "Checking both cities.", Calls: []scripted.Call{
		{Name: "get_weather", Args: map[string]any{"city": "Shanghai"}},
		{Name: "get_weather", Args: map[string]any{"city": "Beijing"}},
	}},
	{Text: "Shanghai is 28 °C and cloudy; Beijing is 22 °C and sunny.", Expect: []scripted.Expect{
		{Result: &scripted.ResultExpect{Tool: "get_weather", Contains: "Beijing: 22"}},
	}},
}}

// Dependent is the script of the second question: Shenzhen first, then the
// city its weather decides.
var Dependent = scripted.Script{Rounds: []scripted.Round{
	{Text: "First, Shenzhen.", Calls: []scripted.Call{{Name: "get_weather", Args: map[string]any{"city": "Shenzhen"}}}},
	{Text: "It is raining in Shenzhen, so Beijing next.", Calls: []scripted.Call{{Name: "get_weather", Args: map[string]any{"city": "Beijing"}}},
		Expect: []scripted.Expect{{Result: &scripted.ResultExpect{Tool: "get_weather", Contains: "raining"}}}},
	{Text: "It is raining in Shenzhen (26 °C), so I checked Beijing: 22 °C and sunny.", Expect: []scripted.Expect{
		{Result: &scripted.ResultExpect{Tool: "get_weather", Contains: "Beijing: 22"}},
	}},
}}

// Ask runs one question against a script and prints what happens.
func Ask(ctx context.Context, question string, s scripted.Script, print bool) (*rein.Outcome, error) {
	model := scripted.New(s)
	var h event.Handler
	if print {
		start := time.Now()
		h = event.HandlerFunc(func(e event.Event) {
			at := time.Since(start).Round(time.Millisecond)
			switch e.Type {
			case event.ToolStarted:
				fmt.Printf("  %6s  round %d  → %s %s\n", at, e.Round, e.Name, e.Args)
			case event.Result:
				fmt.Printf("  %6s  round %d  ✓ %s (%.0f ms)\n", at, e.Round, e.Content, e.Duration)
			}
		})
	}
	agent, err := rein.New(rein.Options{Model: model, Tools: []rein.Tool{WeatherTool()}, Events: h})
	if err != nil {
		return nil, err
	}
	defer agent.Close(ctx)
	out, err := agent.Run(ctx, question)
	if err != nil {
		return out, err
	}
	if err := model.Verify(); err != nil {
		return out, fmt.Errorf("the script did not see what it expected: %w", err)
	}
	return out, nil
}

func main() {
	ctx := context.Background()
	for _, q := range []struct {
		text string
		s    scripted.Script
	}{
		{"What is the weather in Shanghai and Beijing right now?", Parallel},
		{"Check Shenzhen; if it is raining there check Beijing, otherwise Shanghai.", Dependent},
	} {
		fmt.Println("Q:", q.text)
		out, err := Ask(ctx, q.text, q.s, true)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		fmt.Printf("A: %s\n   (%d rounds, %d with tool calls)\n\n", out.Answer, out.Rounds, out.ToolSteps)
	}
}
