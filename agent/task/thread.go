package task

import (
	"context"
	"time"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
)

// keeper is what of the parent's journal keeps a child as a thread of its
// own, linked to the call that ran it: a session.Store is one. A parent
// whose journal is not (a turn kept in memory) keeps its children in
// memory too.
type keeper interface {
	loop.Journal
	SaveThread(ctx context.Context, th record.Thread) error
	SaveTurn(ctx context.Context, t record.Turn) error
}

// keeperOf returns the parent's journal as a keeper, or nil.
func keeperOf(p *loop.Parent) keeper {
	k, _ := p.Journal().(keeper)
	return k
}

// open records the child's thread, linked to the parent's call, and its
// turn as running, so that the child's items have a thread to go to. It
// reports whether the child is kept: a store that refuses leaves the child
// in memory (its events still reach the parent's stream and trace).
func (c *child) open(ctx context.Context, k keeper, p *loop.Parent, callID, title string) bool {
	if k == nil {
		return false
	}
	now := time.Now()
	if c.Link.IsZero() {
		c.Link = record.Link{ThreadID: p.ThreadID(), TurnID: p.TurnID(), CallID: callID}
		th := record.Thread{ID: c.ThreadID, Title: title, Created: now, Updated: now, Parent: c.Link}
		if k.SaveThread(ctx, th) != nil {
			c.Link = record.Link{}
			return false
		}
	}
	if k.SaveTurn(ctx, record.Turn{ID: c.TurnID, ThreadID: c.ThreadID, Status: record.StatusRunning, Started: now}) != nil {
		return false
	}
	return true
}

// close records how the child's turn stands: ended, or paused with the
// state it resumes from. It writes even when ctx is cancelled: an
// interrupted child's end is recorded too. A failure costs only the
// child's record.
func (c *child) close(ctx context.Context, k keeper, out *loop.Outcome, runErr error) {
	if k == nil {
		return
	}
	rec := record.Turn{ID: c.TurnID, Status: record.StatusFailed, StopReason: record.StopProviderError, Error: errText(runErr)}
	if out != nil {
		var err error
		if rec, err = out.Record(); err != nil {
			return
		}
	}
	rec.ThreadID = c.ThreadID
	if rec.Status != record.StatusPaused {
		rec.Ended = time.Now()
	}
	_ = k.SaveTurn(context.WithoutCancel(ctx), rec)
}
