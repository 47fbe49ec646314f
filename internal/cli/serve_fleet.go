package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

// defaultDrainTimeout is how long a leaving node (SIGTERM) waits for its
// running turns to reach a round boundary before it hands over the rest as
// they stand.
const defaultDrainTimeout = 30 * time.Second

// fleetFlags are rein serve's flags for a node of a fleet (threads in
// PostgreSQL).
type fleetFlags struct {
	// maxRunning bounds the turns the node runs at once (0: 10 per core).
	maxRunning int
	// drain is the drain deadline on SIGTERM.
	drain time.Duration
	// idle and keep bound the threads the node holds in memory
	// (session.Scheduler.EvictIdle).
	idle time.Duration
	keep int
}

// Defaults of the bound on the threads a node holds in memory: a thread
// with nothing going on is dropped (the database keeps it) after
// defaultIdleThreads unused, or sooner while the node holds more than
// defaultKeepThreads.
const (
	defaultIdleThreads = 5 * time.Minute
	defaultKeepThreads = 1000
	evictEvery         = 5 * time.Second
)

func (f *fleetFlags) add(fl *pflag.FlagSet) {
	fl.IntVar(&f.maxRunning, "max-running", 0, "with a PostgreSQL --db: how many turns this node runs at once before it takes no more from other nodes (default 10 per core)")
	fl.DurationVar(&f.idle, "idle-threads", defaultIdleThreads, "with a PostgreSQL --db: how long a thread with no turn going on and no subscriber stays in this node's memory unused (the database keeps it; 0: until --keep-threads needs the room)")
	fl.IntVar(&f.keep, "keep-threads", defaultKeepThreads, "with a PostgreSQL --db: how many threads this node holds in memory before it drops the least recently used idle ones (0: no bound)")
	fl.DurationVar(&f.drain, "drain-timeout", defaultDrainTimeout, "with a PostgreSQL --db: on SIGTERM, how long running turns get to reach a round boundary before they are handed over to other nodes as they stand")
}

func (f *fleetFlags) check() error {
	if f.maxRunning < 0 {
		return fmt.Errorf("--max-running %d: give 1 or more (0 is 10 per core)", f.maxRunning)
	}
	if f.idle < 0 || f.keep < 0 {
		return fmt.Errorf("--idle-threads %v, --keep-threads %d: give 0 or more", f.idle, f.keep)
	}
	if f.drain < 0 {
		return fmt.Errorf("--drain-timeout %v: give 0 or more", f.drain)
	}
	return nil
}

// fleetNode is what a node of a fleet runs besides the server: the taker
// of other nodes' turns and the drain on SIGTERM. Its zero value (threads
// in a file) does nothing.
type fleetNode struct {
	threads *pgstore.Store
	sched   *session.Scheduler
	logw    io.Writer
	drain   time.Duration

	stopTake context.CancelFunc
	took     sync.WaitGroup
	drained  chan struct{}
	// beforeDrain, when not nil, runs as the drain starts, before the
	// scheduler drains: serve stops its cron scheduler there.
	beforeDrain func()
}

// startFleet starts taking the turns other nodes left (queued, lost or
// handed over) into sched, when the threads are in PostgreSQL.
func (b *serveBackend) startFleet(ctx context.Context, sched *session.Scheduler, logw io.Writer) *fleetNode {
	n := &fleetNode{threads: b.threads, sched: sched, logw: logw, drain: b.f.fleet.drain, drained: make(chan struct{})}
	if n.threads == nil {
		return n
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.stopTake = cancel
	if fl := b.f.fleet; fl.idle > 0 || fl.keep > 0 {
		n.took.Add(1)
		go func() {
			defer n.took.Done()
			sched.SweepIdle(tctx, evictEvery, fl.idle, fl.keep)
		}()
	}
	n.took.Add(1)
	go func() {
		defer n.took.Done()
		// The session decides which calls in flight run again, with the
		// run's own tools: every open call is handed to it.
		all := func(string) bool { return true }
		var said time.Time
		n.threads.TakeTurns(tctx, pgstore.DefaultPoll, all, func(ctx context.Context, t pgstore.Taken) error {
			return sched.Continue(ctx, session.Continuation{Turn: t.Turn, Lost: t.Lost, Rerun: t.Rerun, Steers: t.Steers, Resume: t.Resume, Interrupt: t.Interrupt})
		}, func(err error) {
			// Said once a minute at most while the database is down (a
			// poll fails four times a second).
			if now := time.Now(); now.Sub(said) >= time.Minute {
				said = now
				fmt.Fprintf(logw, "rein: taking turns of other nodes: %v\n", err)
			}
		})
	}()
	return n
}

// stop stops taking turns and dropping idle threads, and waits for both.
func (n *fleetNode) stop() {
	if n.stopTake != nil {
		n.stopTake()
		n.took.Wait()
	}
}

// serving returns the context the server runs under: on a node of a
// fleet, when ctx ends (SIGTERM) the node stops taking turns, drains
// (running turns handed over at a round boundary within the drain
// deadline; /readyz answers 503 meanwhile) and only then ends the server.
// Elsewhere it is ctx. The returned func ends the drain's goroutine.
func (n *fleetNode) serving(ctx context.Context) (context.Context, func()) {
	if n.threads == nil {
		return ctx, func() {}
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		select {
		case <-quit:
			return
		case <-ctx.Done():
		}
		n.stop()
		if n.beforeDrain != nil {
			n.beforeDrain()
		}
		// The queued turns this node would have started are the other
		// nodes' at once, not a lease after their threads' last write.
		lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.threads.Leave(lctx); err != nil {
			fmt.Fprintf(n.logw, "rein: %v (the other nodes take this node's queued turns within a lease)\n", err)
		}
		lcancel()
		dctx, dcancel := context.WithTimeout(context.Background(), n.drain)
		defer dcancel()
		start := time.Now()
		if err := n.sched.Drain(dctx); err != nil {
			fmt.Fprintf(n.logw, "rein: %v\n", err)
		} else {
			fmt.Fprintf(n.logw, "rein: drained in %v: running turns handed over to other nodes\n", time.Since(start).Round(time.Millisecond))
		}
		close(n.drained)
	}()
	return sctx, func() {
		close(quit)
		<-done
	}
}

// ended is the server's end on a node of a fleet: nil once it drained (a
// node that left on SIGTERM exits 0), err otherwise.
func (n *fleetNode) ended(err error) error {
	select {
	case <-n.drained:
		if err == nil || errors.Is(err, context.Canceled) {
			return nil
		}
	default:
	}
	return err
}

// ready is the readiness check of /readyz: the shared store answers.
func (b *serveBackend) ready() func(context.Context) error {
	if b.threads == nil {
		return nil
	}
	return b.threads.Ping
}

// stdin is the standard input the stdio server reads. On a node of a
// fleet it is made pollable when it is a file (a pipe): the server's end
// after a drain closes it, and only a pollable file's read returns then
// (a blocking read of a pipe would hold the node until its client closes
// it, and SIGTERM would not end the node).
func (n *fleetNode) stdin(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if n.threads == nil || !ok {
		return r
	}
	fd := f.Fd()
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return r
	}
	return os.NewFile(fd, f.Name())
}
