package main

import (
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

func TestParallelLookupsRunInOneRound(t *testing.T) {
	start := time.Now()
	out, err := Ask(t.Context(), "Shanghai and Beijing?", Parallel, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.ToolSteps != 1 || out.Rounds != 2 {
		t.Errorf("tool steps %d rounds %d, want 1 and 2", out.ToolSteps, out.Rounds)
	}
	calls := 0
	for _, it := range out.Items {
		if it.Role == llm.RoleAssistant {
			calls = max(calls, len(it.Calls()))
		}
	}
	if calls != 2 {
		t.Errorf("most calls in one round = %d, want 2", calls)
	}
	// Two 200 ms lookups in parallel take about 200 ms, not 400.
	if took := time.Since(start); took > 2*lookupDelay-50*time.Millisecond {
		t.Errorf("took %s: the lookups did not overlap", took)
	}
}

func TestDependentLookupTakesTwoRounds(t *testing.T) {
	out, err := Ask(t.Context(), "Shenzhen, then?", Dependent, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.ToolSteps != 2 || out.Rounds != 3 {
		t.Errorf("tool steps %d rounds %d, want 2 and 3", out.ToolSteps, out.Rounds)
	}
	if want := "It is raining in Shenzhen (26 °C), so I checked Beijing: 22 °C and sunny."; out.Answer != want {
		t.Errorf("answer %q", out.Answer)
	}
}
