package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/redisrelay"
)

// runControl hands the other servers' control notices (steer, interrupt of
// a turn this server runs) to sched until ctx ends; the returned channel
// closes when it has stopped.
func runControl(ctx context.Context, relay *redisrelay.Relay, sched *session.Scheduler, logw io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		deliver := func(n session.Notice) { sched.Notice(n) }
		if err := relay.RunControl(ctx, deliver, nil); err != nil {
			fmt.Fprintln(logw, "rein: control from other servers stopped (steer and interrupt reach this server's turns at their next round):", err)
		}
	}()
	return done
}

// control is the relay as the scheduler's carrier of control notices, or
// nil.
func (b *serveBackend) control() session.Control {
	if b.relay == nil {
		return nil
	}
	return b.relay
}
