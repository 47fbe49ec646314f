package store

import (
	"context"
	"slices"
	"testing"

	"github.com/reinhq/rein/record"
)

// TestThreadKeepsItsForcedTools: a thread's forced tools (thread/start's
// forceTools) are stored as force_tools and read back.
func TestThreadKeepsItsForcedTools(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	th, err := s.CreateThread(ctx, record.Thread{Settings: record.Settings{ForceTools: []string{"exec", "rag"}}})
	if err != nil {
		t.Fatal(err)
	}
	var settings string
	if err := s.db.QueryRowContext(ctx, `SELECT settings FROM threads WHERE id = ?`, th.ID).Scan(&settings); err != nil {
		t.Fatal(err)
	}
	if settings != `{"force_tools":["exec","rag"]}` {
		t.Errorf("stored settings %s", settings)
	}
	got, err := s.Thread(ctx, th.ID)
	if err != nil || !slices.Equal(got.Settings.ForceTools, []string{"exec", "rag"}) {
		t.Fatalf("read back %+v, %v", got.Settings, err)
	}
}
