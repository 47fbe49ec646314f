package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/record"
)

func TestFindThreadByUniquePrefix(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, id := range []string{"thread_abc111", "thread_abc222", "thread_xyz333", "other_9"} {
		if _, err := s.CreateThread(ctx, record.Thread{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"thread_abc111", "thread_abc111", nil},
		{"thread_abc1", "thread_abc111", nil},
		{"abc2", "thread_abc222", nil},
		{"xyz", "thread_xyz333", nil},
		{"other", "other_9", nil},
		{"abc", "", ErrAmbiguous},
		{"thread_", "", ErrAmbiguous},
		{"nope", "", ErrNotFound},
		{"", "", ErrNotFound},
	} {
		got, err := s.FindThread(ctx, tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("FindThread(%q) = %v, %v; want %v", tc.in, got.ID, err, tc.err)
			}
			continue
		}
		if err != nil || got.ID != tc.want {
			t.Errorf("FindThread(%q) = %q, %v; want %q", tc.in, got.ID, err, tc.want)
		}
	}
	_, err := s.FindThread(ctx, "abc")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 || !strings.Contains(err.Error(), "thread_abc111") || !strings.Contains(err.Error(), "thread_abc222") {
		t.Errorf("ambiguous prefix: %v; want both candidates listed", err)
	}
}

func TestWorkspaceThreadsListsOnlyThatWorkspaceNewestFirst(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	var ids []string
	for _, ws := range []string{"/a", "/b", "/a"} {
		th, err := s.CreateThread(ctx, record.Thread{Settings: record.Settings{Workspace: ws}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	got, err := s.WorkspaceThreads(ctx, "/a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != ids[2] || got[1].ID != ids[0] {
		t.Errorf("WorkspaceThreads(/a) = %v; want %s then %s", got, ids[2], ids[0])
	}
	if got, _ := s.WorkspaceThreads(ctx, "/a", 1); len(got) != 1 || got[0].ID != ids[2] {
		t.Errorf("WorkspaceThreads(/a, 1) = %v; want only %s", got, ids[2])
	}
}
