package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// Two workspaces keep their own memory; the user's is seen from both, and
// an entry of one workspace is neither seen, edited nor removed from the
// other.
func TestMemoryScopesIsolateWorkspacesAndShareTheUsers(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	const a, b = "/src/a", "/src/b"
	ma, _, err := s.AddMemory(ctx, a, "Builds with make.")
	if err != nil {
		t.Fatal(err)
	}
	mu, _, _ := s.AddMemory(ctx, UserScope, "Prefers tabs.")
	mb, _, _ := s.AddMemory(ctx, b, "Builds with bazel.")
	texts := func(scopes []string) []string {
		ms, err := s.Memories(ctx, scopes)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, ScopeName(m.Workspace)+":"+m.Text)
		}
		return out
	}
	tests := []struct {
		name   string
		scopes []string
		want   []string
	}{
		{"from a", Visible(a), []string{"workspace:Builds with make.", "user:Prefers tabs."}},
		{"from b", Visible(b), []string{"user:Prefers tabs.", "workspace:Builds with bazel."}},
		{"the user's", Visible(UserScope), []string{"user:Prefers tabs."}},
		{"a's alone", []string{a}, []string{"workspace:Builds with make."}},
		{"none", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := texts(tc.scopes); !slices.Equal(got, tc.want) {
				t.Fatalf("Memories = %q, want %q", got, tc.want)
			}
			if n, err := s.MemoryCount(ctx, tc.scopes); err != nil || n != len(tc.want) {
				t.Fatalf("MemoryCount = %d, %v; want %d", n, err, len(tc.want))
			}
		})
	}
	// The same text in two workspaces is two entries; in a workspace that
	// the user's memory already holds, it is that entry.
	if m, dup, _ := s.AddMemory(ctx, b, "builds with make"); dup {
		t.Fatalf("b's make duplicates a's: %+v", m)
	}
	if m, dup, _ := s.AddMemory(ctx, a, "prefers tabs"); !dup || m.ID != mu.ID {
		t.Fatalf("a's tabs = %+v dup=%v; want the user's %s", m, dup, mu.ID)
	}
	if _, err := s.EditMemory(ctx, Visible(b), ma.ID, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("edit of a's entry from b: %v", err)
	}
	if err := s.DeleteMemory(ctx, Visible(b), ma.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a's entry from b: %v", err)
	}
	if _, err := s.EditMemory(ctx, Visible(a), mu.ID, "Prefers tabs, width 4."); err != nil {
		t.Fatalf("edit of the user's entry from a: %v", err)
	}
	if err := s.DeleteMemory(ctx, Visible(b), mb.ID); err != nil {
		t.Fatal(err)
	}
}

// A notebook's name is its scope's: two workspaces each have a "todo", the
// user's "todo" is shadowed by the workspace's, and notes go only to a
// notebook seen from the caller's scopes.
func TestNotebookScopes(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	const a, b = "/src/a", "/src/b"
	na, err := s.CreateNotebook(ctx, a, "todo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateNotebook(ctx, b, "todo"); err != nil {
		t.Fatalf("b's todo: %v", err)
	}
	nu, _ := s.CreateNotebook(ctx, UserScope, "todo")
	if _, err := s.CreateNotebook(ctx, a, "todo"); err == nil {
		t.Fatal("a second todo in a")
	}
	if nb, err := s.Notebook(ctx, Visible(a), "todo"); err != nil || nb.ID != na.ID {
		t.Fatalf("todo from a = %+v, %v; want a's %s", nb, err, na.ID)
	}
	if nb, err := s.Notebook(ctx, Visible(UserScope), "todo"); err != nil || nb.ID != nu.ID {
		t.Fatalf("todo of the user's = %+v, %v", nb, err)
	}
	if nbs, _ := s.Notebooks(ctx, Visible(a)); len(nbs) != 2 || nbs[0].ID != na.ID || nbs[1].ID != nu.ID {
		t.Fatalf("notebooks from a = %+v", nbs)
	}
	if n, _ := s.NotebookCount(ctx, Visible(b)); n != 2 {
		t.Fatalf("count from b = %d", n)
	}
	if _, err := s.AddNote(ctx, Visible(b), Note{Notebook: na.ID, Content: "x"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("note to a's notebook from b: %v", err)
	}
	r, err := s.AddNote(ctx, Visible(a), Note{Notebook: "todo", Content: "ship"})
	if err != nil || r.Notebook != na.ID {
		t.Fatalf("note to todo from a = %+v, %v", r, err)
	}
	title := "t"
	if _, err := s.EditNote(ctx, Visible(b), na.ID, r.ID, NoteEdit{Title: &title}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("edit of a's note from b: %v", err)
	}
	if _, err := s.Notes(ctx, Visible(b), na.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("notes of a's notebook from b: %v", err)
	}
	if err := s.DeleteNotebook(ctx, Visible(b), na.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a's notebook from b: %v", err)
	}
	// By name from a, the workspace's todo goes, the user's stays.
	if err := s.DeleteNotebook(ctx, Visible(a), "todo"); err != nil {
		t.Fatal(err)
	}
	if nb, err := s.Notebook(ctx, Visible(a), "todo"); err != nil || nb.ID != nu.ID {
		t.Fatalf("todo from a after rm = %+v, %v; want the user's", nb, err)
	}
}

// What a database saved before scopes (version 7) is the user's after the
// migration: entries, notebooks and their notes kept with their ids, and
// an id removed before is not given again.
func TestScopeMigrationKeepsMemoryAndNotebooksAsTheUsers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rein.db")
	old, err := Config{}.open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, old.conn, 7); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO memory (id, text, norm, created, updated) VALUES (1, 'Prefers tabs.', 'prefers tabs', 1, 1), (2, 'gone', 'gone', 1, 1)`,
		`DELETE FROM memory WHERE id = 2`,
		`INSERT INTO notebooks (id, name, created) VALUES ('nb_old', 'research', 1)`,
		`INSERT INTO notes (notebook, content, created, updated) VALUES ('nb_old', 'kept', 1, 1)`,
	} {
		if _, err := old.conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Memories(ctx, Visible("/any"))
	if err != nil || len(ms) != 1 || ms[0].ID != "m1" || ms[0].Workspace != UserScope {
		t.Fatalf("memory after migration = %+v, %v", ms, err)
	}
	if m, _, _ := s.AddMemory(ctx, "/any", "new"); m.ID != "m3" {
		t.Fatalf("new entry %s, want m3 (m2 was used)", m.ID)
	}
	ns, err := s.Notes(ctx, Visible("/any"), "research")
	if err != nil || len(ns) != 1 || ns[0].Content != "kept" {
		t.Fatalf("notes after migration = %+v, %v", ns, err)
	}
	// The notes still belong to their notebook: removing it removes them.
	if err := s.DeleteNotebook(ctx, Visible(UserScope), "nb_old"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d notes left after their notebook went, %v", n, err)
	}
}
