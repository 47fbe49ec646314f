package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/session"
)

// maxOwnedCache bounds the threads a connection remembers it may use;
// past it, a thread's owner is read again on each use.
const maxOwnedCache = 4096

// ownedCache is the set of threads a named token's connection owns, as
// far as it has checked.
type ownedCache struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (o *ownedCache) has(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ids[id]
}

func (o *ownedCache) add(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ids == nil {
		o.ids = make(map[string]bool)
	}
	if len(o.ids) < maxOwnedCache {
		o.ids[id] = true
	}
}

// noThread is the error for a thread a connection may not see: the same
// as for a thread that does not exist, whichever it is, so a named token
// cannot learn that another's thread exists.
func noThread(id string) error {
	return &protocol.Error{
		Code: protocol.CodeThreadNotFound, Message: fmt.Sprintf("thread %s: %v", clip(id), session.ErrThreadNotFound),
		Data: &protocol.ErrorData{Kind: "threadNotFound"},
	}
}

// mayUse returns nil when the connection may use thread id: always for the
// admin, for a named token only when it created the thread. Otherwise,
// and for a thread that does not exist, it returns noThread.
func (c *conn) mayUse(ctx context.Context, id string) error {
	if c.who.admin() || c.mine.has(id) {
		return nil
	}
	// The owner is read without loading the thread: another token's thread
	// is neither held nor started by a refused call.
	owner, err := c.s.c.Sessions.ThreadOwner(ctx, id)
	if errors.Is(err, session.ErrThreadNotFound) || (err == nil && owner != c.who.name) {
		return noThread(id)
	}
	if err != nil {
		return err
	}
	c.mine.add(id)
	return nil
}
