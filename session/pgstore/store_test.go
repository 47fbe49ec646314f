package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/session/storetest"
)

// open opens a node on url, closed when the test ends.
func open(t *testing.T, url string, c pgstore.Config) *pgstore.Store {
	t.Helper()
	c.URL = url
	s, err := pgstore.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// expire ends a turn's lease now, as if its node stopped renewing it long
// enough ago.
func expire(t *testing.T, url, turnID string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(context.Background(), `UPDATE turns SET lease_until = now() - interval '1 second' WHERE id = $1 AND status = 'running'`, turnID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("expire the lease of %s: %v (%d rows)", turnID, err, tag.RowsAffected())
	}
}

// The PostgreSQL store passes the suite: each handle is a node of its own
// (its own name, pool and heartbeat) on one schema; a crash is a lease
// that expired, its node gone.
func TestPostgresStoreConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.DB {
		url := servicetest.Postgres(t)
		return storetest.DB{
			Handle: func(t *testing.T) session.Store {
				// A long lease: the heartbeat must not be what the tests
				// depend on.
				return open(t, url, pgstore.Config{Lease: time.Minute})
			},
			Crash: func(t *testing.T, _, turnID string) { expire(t, url, turnID) },
		}
	})
}
