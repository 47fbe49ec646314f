package store

import (
	"context"
	"errors"
	"testing"
)

func TestMemoryAddReportsDuplicates(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	first, dup, err := s.AddMemory(ctx, UserScope, "The user prefers tabs.")
	if err != nil || dup || first.ID != "m1" {
		t.Fatalf("first add = %+v, %v, %v", first, dup, err)
	}
	tests := []struct {
		text    string
		wantDup bool
	}{
		{"the user   prefers TABS", true},
		{"The user prefers tabs!!", true},
		{"The user prefers spaces.", false},
	}
	for _, tc := range tests {
		m, dup, err := s.AddMemory(ctx, UserScope, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if dup != tc.wantDup || (dup && m.ID != first.ID) {
			t.Errorf("AddMemory(%q) = %+v dup=%v, want dup=%v", tc.text, m, dup, tc.wantDup)
		}
	}
	if n, err := s.MemoryCount(ctx, userOnly); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}
	if _, _, err := s.AddMemory(ctx, UserScope, "  \n "); err == nil {
		t.Fatal("empty text saved")
	}
}

func TestMemoryEditAndDelete(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a, _, _ := s.AddMemory(ctx, UserScope, "likes Go")
	b, _, _ := s.AddMemory(ctx, UserScope, "lives in Lyon")
	m, err := s.EditMemory(ctx, userOnly, b.ID, "lives in Paris")
	if err != nil || m.Text != "lives in Paris" || m.ID != b.ID {
		t.Fatalf("edit = %+v, %v", m, err)
	}
	// Editing an entry to its own text (case changed) is fine.
	if _, err := s.EditMemory(ctx, userOnly, a.ID, "Likes Go."); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, text string
		want           error
	}{
		{"duplicate of another", b.ID, "likes go", ErrDuplicate},
		{"unknown id", "m99", "x", ErrNotFound},
		{"not an id", "zz", "x", ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.EditMemory(ctx, userOnly, tc.id, tc.text); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if err := s.DeleteMemory(ctx, userOnly, "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemory(ctx, userOnly, "m1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete err = %v", err)
	}
	ms, err := s.Memories(ctx, userOnly)
	if err != nil || len(ms) != 1 || ms[0].Text != "lives in Paris" {
		t.Fatalf("memories = %+v, %v", ms, err)
	}
	// Ids are never reused.
	c, _, _ := s.AddMemory(ctx, UserScope, "new")
	if c.ID != "m3" {
		t.Fatalf("new id = %s, want m3", c.ID)
	}
}

// userOnly is the user's scope alone.
var userOnly = []string{UserScope}
