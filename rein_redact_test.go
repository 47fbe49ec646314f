package rein_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/redact"
)

// TestAgentRedactsByDefault pins the facade's door: an agent built with no
// redaction options still keeps the environment's keys out of what the
// model, the events and the thread's history see; Engine.NoRedact is the
// explicit way out.
func TestAgentRedactsByDefault(t *testing.T) {
	const key = "sk-proj-Pp3Oo5Ii7Uu9Yy1Tt3Rr5"
	t.Setenv("OPENAI_API_KEY", key)
	script := `rounds:
  - calls: [{id: c1, name: echo, args: {text: "the key is ` + key + `"}}]
  - text: done
`
	for _, tc := range []struct {
		name     string
		noRedact bool
	}{{"default", false}, {"opted out", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var results []string
			a, err := rein.New(rein.Options{
				Model: scriptedModel(t, script), Tools: []rein.Tool{echo},
				Events: event.HandlerFunc(func(e event.Event) {
					if e.Type == event.Result {
						results = append(results, e.Content)
					}
				}),
				NoRedact: tc.noRedact,
			})
			if err != nil {
				t.Fatal(err)
			}
			th := a.NewThread()
			if _, err := th.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			for _, it := range th.History() {
				for _, p := range it.Parts {
					if p.Result != nil {
						results = append(results, p.Result.Content)
					}
				}
			}
			if len(results) != 2 {
				t.Fatalf("results %q", results)
			}
			for _, r := range results {
				if leaked := strings.Contains(r, key); leaked != tc.noRedact {
					t.Errorf("result %q: key shown %v", r, leaked)
				}
				if !tc.noRedact && !strings.Contains(r, redact.Mask) {
					t.Errorf("result %q has no mask", r)
				}
			}
		})
	}
}
