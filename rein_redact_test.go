package rein_test

import (
	"context"
	"slices"
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

// TestAgentRedactsAKeyExportedAfterItsFirstTurn: the redactor an agent
// keeps between turns is rebuilt when the environment changes, so a key
// exported (or rotated) while the agent runs is redacted from its next
// turn on, on the same thread and on a new one.
func TestAgentRedactsAKeyExportedAfterItsFirstTurn(t *testing.T) {
	const (
		first   = "Zq8Wx2Lp5Nv7Kc3Hb9Td"
		rotated = "Mf4Rg6Yh8Uj2Ik4Ol6Pa"
	)
	t.Setenv("REIN_TEST_LATER_TOKEN", "")
	script := `rounds:
  - calls: [{id: c1, name: echo, args: {text: "before ` + first + `"}}]
  - text: done
  - calls: [{id: c2, name: echo, args: {text: "after ` + first + `"}}]
  - text: done
  - calls: [{id: c3, name: echo, args: {text: "rotated ` + rotated + `"}}]
  - text: done
`
	var results []string
	a, err := rein.New(rein.Options{
		Model: scriptedModel(t, script), Tools: []rein.Tool{echo},
		Events: event.HandlerFunc(func(e event.Event) {
			if e.Type == event.Result {
				results = append(results, e.Content)
			}
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	th := a.NewThread()
	if _, err := th.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REIN_TEST_LATER_TOKEN", first)
	if _, err := th.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REIN_TEST_LATER_TOKEN", rotated)
	if _, err := a.NewThread().Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	want := []string{"before " + first, "after " + redact.Mask, "rotated " + redact.Mask}
	if !slices.Equal(results, want) {
		t.Errorf("results %q, want %q", results, want)
	}
}
