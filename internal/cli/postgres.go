package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/session/redisrelay"
	"github.com/reinhq/rein/store"
)

// postgresURL returns the PostgreSQL URL the threads are kept at, when
// --db (db), or else $REIN_DB, is one.
func postgresURL(db string) (string, bool) {
	if db == "" {
		db = os.Getenv(store.EnvPath)
	}
	return db, pgstore.IsURL(db)
}

// openThreads opens the PostgreSQL thread store when --db or $REIN_DB
// names one (running at most maxRunning turns at once; 0: the default), and returns the SQLite file the server keeps the tools' data
// in (knowledge bases, memory, notes, jobs): db itself otherwise, this
// machine's default file then.
func openThreads(ctx context.Context, db string, maxRunning int) (*pgstore.Store, string, error) {
	u, ok := postgresURL(db)
	if !ok {
		return nil, db, nil
	}
	// Every serve node takes over lost nodes' turns (startFleet).
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxRunning: maxRunning, TakeOver: true})
	if err != nil {
		return nil, "", usageError(fmt.Errorf("the thread store %s: %w", redactedURL(u), err))
	}
	local, err := store.LocalPath()
	if err != nil {
		s.Close()
		return nil, "", usageError(err)
	}
	return s, local, nil
}

// redactedURL is a database URL without its password, for messages.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the database URL"
	}
	return u.Redacted()
}

// postgresReport says whether the PostgreSQL thread store answers and its
// schema is this rein's; "" when the threads are in a file. ok is false
// when it does not answer or is newer than this rein.
func postgresReport(ctx context.Context, db string) (line string, ok bool) {
	u, isPG := postgresURL(db)
	if !isPG {
		return "", true
	}
	v, err := pgstore.Version(ctx, u)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: cannot connect: %v", redactedURL(u), err), false
	case v == 0:
		return fmt.Sprintf("%s: answers; no rein schema yet (rein serve creates version %d)", redactedURL(u), pgstore.SchemaVersion), true
	case v > pgstore.SchemaVersion:
		return fmt.Sprintf("%s: schema version %d is newer than this rein's (%d): upgrade rein", redactedURL(u), v, pgstore.SchemaVersion), false
	case v < pgstore.SchemaVersion:
		return fmt.Sprintf("%s: schema version %d (rein serve upgrades it to %d)", redactedURL(u), v, pgstore.SchemaVersion), true
	}
	return fmt.Sprintf("%s: schema version %d", redactedURL(u), v), true
}

// storedTrace reads the trace events kept for thread, from the PostgreSQL
// thread store when db (or $REIN_DB) names one, else from the file.
func storedTrace(ctx context.Context, db, thread string) ([]json.RawMessage, error) {
	if u, ok := postgresURL(db); ok {
		s, err := pgstore.Open(ctx, pgstore.Config{URL: u})
		if err != nil {
			return nil, usageError(fmt.Errorf("the thread store %s: %w", redactedURL(u), err))
		}
		defer s.Close()
		return s.Trace(ctx, thread)
	}
	st, err := openStore(ctx, db)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if thread, err = resolveThread(ctx, st, thread); err != nil {
		return nil, err
	}
	return st.Trace(ctx, thread)
}

// envRedis names the Redis that carries live events between servers.
const envRedis = "REIN_REDIS"

// openRelay connects to the Redis that carries live events between the
// servers sharing threads (--redis, else $REIN_REDIS); nil when none is
// named. It needs threads in PostgreSQL: a file is one server's.
func openRelay(ctx context.Context, addr string, threads *pgstore.Store) (*redisrelay.Relay, error) {
	if addr == "" {
		addr = os.Getenv(envRedis)
	}
	if addr == "" {
		return nil, nil
	}
	if threads == nil {
		return nil, usageError(fmt.Errorf("--redis relays events between servers sharing a PostgreSQL store: give --db postgres://… too"))
	}
	r, err := redisrelay.Open(ctx, redisrelay.Config{Addr: addr, Node: threads.Node()})
	if err != nil {
		return nil, usageError(err)
	}
	return r, nil
}

// relayTo hands the other servers' live events to sched's subscribers
// until the returned stop is called; a relay that stops on its own says
// why on logw.
func (b *serveBackend) relayTo(sched *session.Scheduler, logw io.Writer) (stop func()) {
	if b.relay == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.relay.Run(ctx, sched.Relay); err != nil {
			fmt.Fprintln(logw, "rein: live events from other servers stopped:", err)
		}
	}()
	ctlDone := runControl(ctx, b.relay, sched, logw)
	return func() {
		cancel()
		<-done
		<-ctlDone
	}
}

// redisReport says whether the Redis of --redis or $REIN_REDIS answers;
// "" when none is named.
func redisReport(ctx context.Context, addr string) (line string, ok bool) {
	if addr == "" {
		addr = os.Getenv(envRedis)
	}
	if addr == "" {
		return "", true
	}
	if err := redisrelay.Ping(ctx, addr); err != nil {
		return fmt.Sprintf("%s: does not answer: %v", addr, err), false
	}
	return addr + ": answers (live events between servers)", true
}
