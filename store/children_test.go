package store

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
)

func TestDeletingAThreadDeletesItsSubagentsThreads(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	parent, other := newThread(t, s), newThread(t, s)
	save := func(id, parent string) {
		t.Helper()
		if err := s.SaveThread(ctx, record.Thread{ID: id, Parent: record.Link{ThreadID: parent, TurnID: "turn_p", CallID: "t1"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, id, llm.UserText("task of "+id)); err != nil {
			t.Fatal(err)
		}
	}
	save("thread_child", parent)
	save("thread_grandchild", "thread_child")
	save("thread_others", other)
	if err := s.DeleteThread(ctx, parent); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"thread_child", "thread_grandchild"} {
		if _, err := s.Thread(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after its parent was deleted: %v, want ErrNotFound", id, err)
		}
		if items, _ := s.Items(ctx, id); len(items) != 0 {
			t.Errorf("%s kept %d items", id, len(items))
		}
	}
	if th, err := s.Thread(ctx, "thread_others"); err != nil || th.Parent.ThreadID != other {
		t.Errorf("another thread's child: %+v, %v", th, err)
	}
}
