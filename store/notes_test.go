package store

import (
	"context"
	"errors"
	"testing"
)

func TestNotebooksAndNotes(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if n, err := s.NotebookCount(ctx, userOnly); err != nil || n != 0 {
		t.Fatalf("count = %d, %v", n, err)
	}
	nb, err := s.CreateNotebook(ctx, UserScope, "research")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateNotebook(ctx, UserScope, "research"); err == nil {
		t.Fatal("a second notebook with the same name was created")
	}
	if _, err := s.CreateNotebook(ctx, UserScope, "bad name"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad name err = %v", err)
	}
	r1, err := s.AddNote(ctx, userOnly, Note{Notebook: "research", Title: "t1", Content: "c1", Thread: "thread_x"})
	if err != nil || r1.ID != "r1" || r1.Notebook != nb.ID {
		t.Fatalf("add = %+v, %v", r1, err)
	}
	if _, err := s.AddNote(ctx, userOnly, Note{Notebook: nb.ID, Content: "c2"}); err != nil {
		t.Fatal(err)
	}
	title := "t1 edited"
	ed, err := s.EditNote(ctx, userOnly, nb.ID, "r1", NoteEdit{Title: &title})
	if err != nil || ed.Title != title || ed.Content != "c1" {
		t.Fatalf("edit = %+v, %v", ed, err)
	}
	other, _ := s.CreateNotebook(ctx, UserScope, "other")
	bad := []struct {
		name string
		err  error
	}{
		{"note of another notebook", func() error { _, err := s.EditNote(ctx, userOnly, other.ID, "r1", NoteEdit{Title: &title}); return err }()},
		{"unknown note", func() error { _, err := s.EditNote(ctx, userOnly, nb.ID, "r9", NoteEdit{}); return err }()},
		{"unknown notebook", func() error { _, err := s.AddNote(ctx, userOnly, Note{Notebook: "nope", Content: "x"}); return err }()},
		{"notes of unknown notebook", func() error { _, err := s.Notes(ctx, userOnly, "nope"); return err }()},
	}
	for _, b := range bad {
		if !errors.Is(b.err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", b.name, b.err)
		}
	}
	if _, err := s.AddNote(ctx, userOnly, Note{Notebook: nb.ID}); err == nil {
		t.Fatal("an empty note was added")
	}
	notes, err := s.Notes(ctx, userOnly, "research")
	if err != nil || len(notes) != 2 || notes[0].Title != title || notes[1].Content != "c2" {
		t.Fatalf("notes = %+v, %v", notes, err)
	}
	nbs, err := s.Notebooks(ctx, userOnly)
	if err != nil || len(nbs) != 2 || nbs[1].Name != "research" || nbs[1].Records != 2 {
		t.Fatalf("notebooks = %+v, %v", nbs, err)
	}
	if err := s.DeleteNotebook(ctx, userOnly, "research"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Notebook(ctx, userOnly, nb.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted notebook err = %v", err)
	}
}
