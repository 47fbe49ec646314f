// Package redisrelay carries the live events of turns between rein serve
// nodes sharing a PostgreSQL store, over Redis pub/sub: each node publishes
// the events of the turns it runs, and hands the events of other nodes'
// turns to its own subscribers (session.Scheduler.Relay). Redis is never
// the truth: what a subscriber missed it reads from the store.
package redisrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/reinhq/rein/event"
)

// Config configures a Relay.
type Config struct {
	// Addr is Redis's address, HOST:PORT. Required.
	Addr string
	// Prefix starts every channel name, so several fleets (or tests)
	// share one Redis (default "rein:").
	Prefix string
	// Node names this node; its own events coming back are skipped.
	// Required.
	Node string
	// Buffer is how many events may wait to be published (default 4096);
	// beyond it events are dropped, never the turn slowed: a subscriber
	// catches up from the store.
	Buffer int
}

// Relay publishes this node's events and receives the other nodes'. Close
// it when done.
type Relay struct {
	c      *redis.Client
	node   string
	prefix string

	out     chan []byte
	ready   chan struct{}
	once    sync.Once
	mu      sync.RWMutex
	closed  bool
	pubDone chan struct{}
}

// envelope is an event on the wire, with the node that ran its turn.
type envelope struct {
	Node  string      `json:"node"`
	Event event.Event `json:"event"`
}

// Open connects to Redis and starts publishing.
func Open(ctx context.Context, c Config) (*Relay, error) {
	if c.Addr == "" || c.Node == "" {
		return nil, errors.New("redisrelay: give Redis's address and this node's name")
	}
	if c.Prefix == "" {
		c.Prefix = "rein:"
	}
	if c.Buffer <= 0 {
		c.Buffer = 4096
	}
	cl := redis.NewClient(&redis.Options{Addr: c.Addr})
	if err := cl.Ping(ctx).Err(); err != nil {
		cl.Close()
		return nil, fmt.Errorf("redisrelay: Redis at %s: %w", c.Addr, err)
	}
	r := &Relay{c: cl, node: c.Node, prefix: c.Prefix, out: make(chan []byte, c.Buffer), pubDone: make(chan struct{}), ready: make(chan struct{})}
	go r.publish()
	return r, nil
}

// channel is where the events of a thread are published.
func (r *Relay) channel(threadID string) string { return r.prefix + "thread:" + threadID }

// Handle implements event.Handler: the event is queued for publishing
// (session.Config.Events); it never blocks the turn.
func (r *Relay) Handle(e event.Event) {
	if e.ThreadID == "" {
		return
	}
	b, err := json.Marshal(envelope{Node: r.node, Event: e})
	if err != nil {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.out <- b:
	default:
		// Dropped: a subscriber reads what it missed from the store.
	}
}

// publish sends the queued events until Close, several per round trip
// when they queue up.
func (r *Relay) publish() {
	defer close(r.pubDone)
	ctx := context.Background()
	for b := range r.out {
		p := r.c.Pipeline()
		r.queue(ctx, p, b)
	more:
		for range 255 {
			select {
			case b, ok := <-r.out:
				if !ok {
					break more
				}
				r.queue(ctx, p, b)
			default:
				break more
			}
		}
		// A failed publish loses live events only.
		p.Exec(ctx)
	}
}

func (r *Relay) queue(ctx context.Context, p redis.Pipeliner, b []byte) {
	var env struct {
		Event struct {
			ThreadID string `json:"thread_id"`
		} `json:"event"`
	}
	if json.Unmarshal(b, &env) != nil || env.Event.ThreadID == "" {
		return
	}
	p.Publish(ctx, r.channel(env.Event.ThreadID), b)
}

// Run receives the other nodes' events and hands each to deliver (a
// scheduler's Relay) until ctx ends.
func (r *Relay) Run(ctx context.Context, deliver func(event.Event)) error {
	sub := r.c.PSubscribe(ctx, r.prefix+"thread:*")
	defer sub.Close()
	// The subscription is in place once Redis confirms it.
	if _, err := sub.Receive(ctx); err != nil {
		return fmt.Errorf("redisrelay: subscribe: %w", err)
	}
	r.once.Do(func() { close(r.ready) })
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			var env envelope
			if err := json.Unmarshal([]byte(m.Payload), &env); err != nil || env.Node == r.node {
				continue
			}
			// The channel names the thread; an event claiming another is
			// not believed.
			if env.Event.ThreadID != strings.TrimPrefix(m.Channel, r.prefix+"thread:") {
				continue
			}
			deliver(env.Event)
		}
	}
}

// Ready is closed once Run receives: events published from then on reach
// it.
func (r *Relay) Ready() <-chan struct{} { return r.ready }

// Close publishes what is queued and disconnects.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.out)
	r.mu.Unlock()
	<-r.pubDone
	return r.c.Close()
}

// Ping checks the Redis at addr answers.
func Ping(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisrelay: Redis at %s: %w", addr, err)
	}
	return nil
}
