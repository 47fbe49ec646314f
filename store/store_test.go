package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

func TestSchemaVersionCountsTheMigrations(t *testing.T) {
	if SchemaVersion != len(migrations) {
		t.Fatalf("SchemaVersion = %d, but there are %d migrations", SchemaVersion, len(migrations))
	}
}

// Every older version of the database — a fresh file included — reaches
// the latest when opened, and keeps what it held.
func TestMigrationsReachTheLatestFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	for v := 0; v <= SchemaVersion; v++ {
		t.Run("from"+string(rune('0'+v)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rein.db")
			old, err := Config{}.open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, old.conn, v); err != nil {
				t.Fatal(err)
			}
			if v >= 1 {
				// Data written by a database at version v.
				if _, err := old.conn.ExecContext(ctx, `INSERT INTO threads (id, created, updated, title) VALUES ('old', 1, 1, 'from before')`); err != nil {
					t.Fatal(err)
				}
			}
			old.Close()

			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got int
			if err := s.db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != SchemaVersion {
				t.Fatalf("version %d after open, want %d", got, SchemaVersion)
			}
			if v >= 1 {
				th, err := s.Thread(ctx, "old")
				if err != nil || th.Title != "from before" {
					t.Fatalf("old thread after migration: %+v, %v", th, err)
				}
			}
			// Every table of the latest schema works.
			id := newThread(t, s)
			turn, err := s.startTurn(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			recordItems(t, s, id, user(turn.ID, turn.ID+".1", "hi"))
			if _, err := s.AddSteer(ctx, turn.ID, llm.UserText("also")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpeningANewerSchemaIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := Config{}.open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.conn.ExecContext(ctx, `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := Open(ctx, path); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open of version 99: %v, want ErrSchemaTooNew", err)
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name, reinDB, xdg, home, want string
	}{
		{"REIN_DB wins", "/x/my.db", "/data", "/home/u", "/x/my.db"},
		{"XDG_DATA_HOME", "", "/data", "/home/u", "/data/rein/rein.db"},
		{"home fallback", "", "", "/home/u", "/home/u/.local/share/rein/rein.db"},
		{"relative XDG is ignored", "", "data", "/home/u", "/home/u/.local/share/rein/rein.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvPath, tt.reinDB)
			t.Setenv("XDG_DATA_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			got, err := DefaultPath()
			if err != nil || got != tt.want {
				t.Fatalf("DefaultPath() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestThreadsRoundTripAndPage(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	want := record.Thread{Settings: record.Settings{Workspace: "/w", Model: "openai:gpt", Approved: []string{"exec"}, MaxRounds: 5}}
	var ids []string
	for range 5 {
		th, err := s.CreateThread(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	got, err := s.Thread(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Settings, want.Settings) {
		t.Fatalf("thread = %+v, want the fields of %+v", got, want)
	}
	// Pages of 2 list all five, newest first, each once.
	var listed []string
	cursor := ""
	for page := 0; ; page++ {
		ths, next, err := s.Threads(ctx, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range ths {
			listed = append(listed, th.ID)
		}
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatal("pages never end")
		}
		cursor = next
	}
	wantOrder := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if !reflect.DeepEqual(listed, wantOrder) {
		t.Fatalf("listed %v, want %v", listed, wantOrder)
	}

	if err := s.DeleteThread(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted thread: %v, want ErrNotFound", err)
	}
	if err := s.DeleteThread(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
}

func TestItemsRoundTripInOrder(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := newThread(t, s)
	c := call("c1")
	c.ItemID, c.Format = "fc_1", llm.CallText
	a := assistant("t1", "t1.2", "let me look <think>hm</think>", c)
	a.Parts = append([]llm.Part{{Kind: llm.PartReasoning, Text: "why", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "sig", Raw: []byte(`{"a":1}`)}}}, a.Parts...)
	want := []llm.Item{
		user("t1", "t1.1", "What is here?"),
		a,
		result("t1", "t1.3", "c1", "README.md", llm.ResultOK),
		withID(llm.Directive("settle now"), "t1", "t1.4"),
		{ID: "t1.5", TurnID: "t1", Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "It is a README."}}},
	}
	recordItems(t, s, id, want...)
	got, err := s.Items(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("items differ:\n got %+v\nwant %+v", got, want)
	}
	th, _ := s.Thread(ctx, id)
	if th.Title != "What is here?" {
		t.Fatalf("title %q, want the first user message", th.Title)
	}
}

func TestRecordReplacesOnlyAPausePlaceholderInPlace(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := newThread(t, s)
	recordItems(t, s, id,
		user("t1", "t1.1", "hi"),
		assistant("t1", "t1.2", "", call("c1")),
		result("t1", "t1.3", "c1", "[awaiting user reply]", llm.ResultPending),
	)
	answer := result("t1", "t1.3", "c1", "User answered: yes", llm.ResultOK)
	recordItems(t, s, id, answer)
	items, _ := s.Items(ctx, id)
	if len(items) != 3 || !reflect.DeepEqual(items[2], answer) {
		t.Fatalf("after the answer: %+v, want the placeholder replaced in place", items)
	}
	// The answer is not a placeholder: recording its id again is refused.
	if err := s.Record(ctx, id, result("t1", "t1.3", "c1", "again", llm.ResultOK)); !errors.Is(err, ErrNotPlaceholder) {
		t.Fatalf("second replace: %v, want ErrNotPlaceholder", err)
	}
	if err := s.Record(ctx, id, user("t1", "t1.1", "rewritten")); !errors.Is(err, ErrNotPlaceholder) {
		t.Fatalf("rewriting user input: %v, want ErrNotPlaceholder", err)
	}
	if err := s.Record(ctx, "thread_nope", user("t1", "x", "hi")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record into a missing thread: %v, want ErrNotFound", err)
	}
	if err := llm.CheckHistory(items); err != nil {
		t.Fatal(err)
	}
}

func TestTurnLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := newThread(t, s)
	t1, err := s.startTurn(ctx, id, "turn_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.startTurn(ctx, id, "turn_b"); !errors.Is(err, ErrTurnActive) {
		t.Fatalf("second running turn: %v, want ErrTurnActive", err)
	}
	if err := s.DeleteThread(ctx, id); !errors.Is(err, ErrTurnActive) {
		t.Fatalf("delete with a running turn: %v, want ErrTurnActive", err)
	}
	o := &loop.Outcome{ThreadID: id, TurnID: t1.ID, Status: loop.StatusCompleted, StopReason: loop.StopFinished,
		Answer: "done", Rounds: 2, ToolSteps: 1, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, Approved: []string{"exec"}}
	if err := s.finishOutcome(ctx, o); err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := turns[0]
	if len(turns) != 1 || got.Status != loop.StatusCompleted || got.Answer != "done" || got.Rounds != 2 || got.Usage != o.Usage || got.Ended.IsZero() || got.Seq != 1 {
		t.Fatalf("turn = %+v", got)
	}
	th, _ := s.Thread(ctx, id)
	if !reflect.DeepEqual(th.Settings.Approved, []string{"exec"}) || th.Turns != 1 {
		t.Fatalf("thread after the turn: %+v, want exec approved and 1 turn", th)
	}
	t2, err := s.startTurn(ctx, id, "")
	if err != nil || t2.Seq != 2 {
		t.Fatalf("next turn: %+v, %v", t2, err)
	}
	if err := s.finishOutcome(ctx, &loop.Outcome{TurnID: "turn_nope", Status: loop.StatusCompleted}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finishing an unknown turn: %v, want ErrNotFound", err)
	}
}
