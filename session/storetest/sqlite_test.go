package storetest_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/storetest"
	"github.com/reinhq/rein/store"
)

// The SQLite store passes the suite: handles are stores opened on one file
// (one process's view each), a crash is the turn's owner becoming a process
// that is gone.
func TestSQLiteStoreConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.DB {
		path := filepath.Join(t.TempDir(), "rein.db")
		return storetest.DB{
			Handle: func(t *testing.T) session.Store {
				s, err := store.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return session.NewSQLStore(s)
			},
			Crash: func(t *testing.T, _, turnID string) {
				db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				host, _ := os.Hostname()
				// A pid no process has on this host: the owner is gone.
				if _, err := db.Exec(`UPDATE turns SET owner = ? WHERE id = ?`, host+":2147483646:gone", turnID); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// The in-memory store passes the suite but for crashes, which it has none
// of.
func TestMemStoreConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.DB {
		m := session.NewMemStore()
		return storetest.DB{Handle: func(*testing.T) session.Store { return m }}
	})
}
