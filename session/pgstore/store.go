// Package pgstore is rein's thread store on PostgreSQL: the session.Store
// that several rein serve nodes share. Threads, turns, items, pauses,
// steered input and traces live in the database, the only truth; a running
// turn is leased work: the node running it holds a lease with a heartbeat
// and a fencing token, a node whose lease was lost cannot commit (its
// writes fail with a *LeaseLostError), and a lease that expires frees the
// turn for another node (Acquire). The embedded default stays SQLite
// (package store); this one is chosen with a postgres:// URL.
package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reinhq/rein/session"
)

// Defaults of Config.
const (
	// DefaultLease is how long a turn's lease lasts without a heartbeat:
	// a node that dies frees its turns within it.
	DefaultLease = 5 * time.Second
	// DefaultRunningPerCore bounds the turns a node runs, per core
	// (Config.MaxRunning).
	DefaultRunningPerCore = 10
)

// Config configures a Store. Only URL is required.
type Config struct {
	// URL is the database, postgres://USER@HOST:PORT/DB?…; a search_path
	// parameter keeps rein's tables in a schema of their own.
	URL string
	// Node names this node in leases and errors (default host:pid:random).
	Node string
	// Lease is how long a lease lasts without renewal (default
	// DefaultLease); the heartbeat renews it every Lease/3.
	Lease time.Duration
	// MaxRunning is how many turns this node runs at once before Acquire
	// takes no more (default DefaultRunningPerCore per core).
	MaxRunning int
	// TakeOver says the nodes sharing the database take over the turns of
	// lost nodes (TakeTurns): a turn whose lease ended is then left to
	// them for one more lease term, and only a turn no node took in that
	// time is closed as cut when its thread is opened. Without it, opening
	// the thread closes such a turn at once.
	TakeOver bool
}

// Store is a session.Store on PostgreSQL. It is safe for concurrent use;
// any number of nodes may open the same database. Close it to stop its
// heartbeat (its leases then expire and other nodes take its turns).
type Store struct {
	pool  *pgxpool.Pool
	node  string
	lease time.Duration
	max   int
	// takeOver is how long after its lease ended a running turn is left
	// for a node's Acquire before it is closed as cut (Config.TakeOver).
	takeOver time.Duration

	mu sync.Mutex
	// held are the turns this node runs, by id: the fencing token its
	// lease was granted with. A write of a turn carries it, and the
	// database refuses a token that is not the turn's current one.
	held map[string]int64
	// acq makes one Acquire at a time: the room under MaxRunning is
	// counted once per batch.
	acq sync.Mutex

	// ops queues Record's items for the writers (batch.go); closing
	// guards closed against sends on it.
	ops         chan *recordOp
	closing     sync.RWMutex
	closed      bool
	writersDone sync.WaitGroup

	// left is set once the node left (Leave): it is not marked alive
	// again.
	left atomic.Bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.TraceStore = (*Store)(nil)
)

// IsURL reports whether s names a PostgreSQL database rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database, brings its schema to SchemaVersion and
// starts the heartbeat of this node's leases.
func Open(ctx context.Context, c Config) (*Store, error) {
	if c.URL == "" {
		return nil, errors.New("pgstore: no database URL; give postgres://USER@HOST:PORT/DB")
	}
	if c.Node == "" {
		host, _ := os.Hostname()
		c.Node = host + ":" + strconv.Itoa(os.Getpid()) + ":" + strings.ToLower(rand.Text()[:8])
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Lease < 100*time.Millisecond {
		return nil, fmt.Errorf("pgstore: a lease of %v is too short to renew; give at least 100ms", c.Lease)
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = DefaultRunningPerCore * runtime.NumCPU()
	}
	pc, err := pgxpool.ParseConfig(c.URL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: the database URL: %w", err)
	}
	if !strings.Contains(c.URL, "pool_max_conns") && pc.MaxConns < writers+8 {
		// The batch writers, the heartbeat, claims and reads at once.
		pc.MaxConns = writers + 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connect to %s: %w", pc.ConnConfig.Host, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	var takeOver time.Duration
	if c.TakeOver {
		takeOver = c.Lease
	}
	s := &Store{pool: pool, node: c.Node, lease: c.Lease, max: c.MaxRunning, takeOver: takeOver, held: make(map[string]int64),
		stop: make(chan struct{}), done: make(chan struct{}), ops: make(chan *recordOp, maxBatch)}
	if err := s.alive(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.forgetDead(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	go s.heartbeat()
	for range writers {
		s.writersDone.Add(1)
		go s.writer()
	}
	return s, nil
}

// Node returns the name this node holds leases under.
func (s *Store) Node() string { return s.node }

// Close stops the heartbeat and closes the connections. The leases this
// node holds are left to expire: a turn still running elsewhere in this
// process can no longer commit once another node takes it.
func (s *Store) Close() error {
	s.once.Do(func() {
		// The items queued are written first.
		s.closing.Lock()
		s.closed = true
		close(s.ops)
		s.closing.Unlock()
		s.writersDone.Wait()
		close(s.stop)
		<-s.done
		// Gone: the queues it would have started are the other nodes'.
		ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
		_ = s.Leave(ctx)
		cancel()
		s.pool.Close()
	})
	return nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// fence returns the token this node holds turn under, 0 when it holds
// none.
func (s *Store) fence(turnID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[turnID]
}

func (s *Store) hold(turnID string, fence int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[turnID] = fence
}

// release forgets a turn's lease if it is still the one with fence.
func (s *Store) release(turnID string, fence int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[turnID] == fence {
		delete(s.held, turnID)
	}
}

// Running returns how many turns this node holds leases on.
func (s *Store) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}
