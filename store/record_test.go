package store

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/reinhq/rein/record"
)

// The settings column keeps the spelling it had before threads were
// package record's: a database written before reads the same, and one
// written now reads in an older rein.
func TestSettingsColumnSpelling(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	th, err := s.CreateThread(ctx, record.Thread{Settings: record.Settings{
		Workspace: "/w", Model: "openai:gpt", Approved: []string{"exec"}, Approval: "never", Sandbox: "read-only",
		Instructions: "be brief", MaxRounds: 5, EnableTools: []string{"a"}, DisableTools: []string{"b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var workspace, model, settings string
	if err := s.db.QueryRowContext(ctx, `SELECT workspace, model, settings FROM threads WHERE id = ?`, th.ID).Scan(&workspace, &model, &settings); err != nil {
		t.Fatal(err)
	}
	const want = `{"approved":["exec"],"approval":"never","sandbox":"read-only","instructions":"be brief","max_rounds":5,"enable_tools":["a"],"disable_tools":["b"]}`
	if workspace != "/w" || model != "openai:gpt" || settings != want {
		t.Fatalf("stored workspace %q, model %q, settings %s\nwant /w, openai:gpt, %s", workspace, model, settings, want)
	}
	got, err := s.Thread(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings.Workspace != "/w" || got.Settings.MaxRounds != 5 || got.Settings.Approved[0] != "exec" {
		t.Fatalf("read back %+v", got.Settings)
	}
}

// The store keeps the engine's state without importing the engine
// (issue 12 §5): what it imports of rein is the leaf packages.
func TestStoreDoesNotImportTheEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "github.com/reinhq/rein/loop", "github.com/reinhq/rein/session", "github.com/reinhq/rein/dispatch":
			t.Errorf("store depends on %s; the engine's types it keeps belong in package record", p)
		}
	}
}

// A turn record with a status the store does not know is refused, and
// FinishTurn takes only the statuses a turn ends with.
func TestTurnStatusChecked(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	for _, st := range []record.Status{"inProgress", "done", ""} {
		if err := s.SaveTurn(ctx, record.Turn{ID: "turn_x", ThreadID: thread, Status: st}); err == nil || !strings.Contains(err.Error(), "unknown status") {
			t.Errorf("SaveTurn with status %q: %v, want an unknown-status error", st, err)
		}
	}
	tn, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []record.Status{record.StatusRunning, record.StatusQueued, "inProgress"} {
		if err := s.finishTurn(ctx, record.Turn{ID: tn.ID, Status: st}, nil); err == nil {
			t.Errorf("FinishTurn with status %q succeeded", st)
		}
	}
	if err := s.finishTurn(ctx, record.Turn{ID: tn.ID, Status: record.StatusCompleted, StopReason: record.StopFinished}, nil); err != nil {
		t.Fatal(err)
	}
}

// A paused turn's state that is not JSON is refused by each way of
// pausing a turn, and the turn is left as it was.
func TestPausedStateMustBeJSON(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	thread := newThread(t, s)
	tn, err := s.startTurn(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	p := &record.Pause{TurnID: tn.ID, CallID: "q", Tool: "ask_user"}
	bad := []byte(`{"version":1,`)
	for name, pause := range map[string]func() error{
		"SavePause": func() error { return s.savePause(ctx, tn.ID, p, bad) },
		"FinishTurn": func() error {
			return s.finishTurn(ctx, record.Turn{ID: tn.ID, Status: record.StatusPaused, Pause: p, State: bad}, nil)
		},
		"SaveTurn": func() error {
			return s.SaveTurn(ctx, record.Turn{ID: tn.ID, ThreadID: thread, Status: record.StatusPaused, Pause: p, State: bad})
		},
	} {
		if err := pause(); err == nil || !strings.Contains(err.Error(), "not JSON") {
			t.Errorf("%s with a state that is not JSON: %v", name, err)
		}
	}
	if _, err := s.LoadPause(ctx, thread); !errors.Is(err, record.ErrNotPaused) {
		t.Errorf("LoadPause after the refusals: %v, want ErrNotPaused (the turn was not paused)", err)
	}
	// Nothing was written: the turn still runs here, and ends as usual.
	if err := s.finishTurn(ctx, record.Turn{ID: tn.ID, Status: record.StatusCompleted, StopReason: record.StopFinished}, nil); err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, thread)
	if err != nil || len(turns) != 1 || turns[0].Status != record.StatusCompleted || turns[0].Error != "" {
		t.Fatalf("turns after the refusals: %+v, %v", turns, err)
	}
}
