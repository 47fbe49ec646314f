package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"

	"github.com/reinhq/rein/session/pgstore"
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
// names one, and returns the SQLite file the server keeps the tools' data
// in (knowledge bases, memory, notes, jobs): db itself otherwise, this
// machine's default file then.
func openThreads(ctx context.Context, db string) (*pgstore.Store, string, error) {
	u, ok := postgresURL(db)
	if !ok {
		return nil, db, nil
	}
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u})
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
	return st.Trace(ctx, thread)
}
