package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is rein's database. It is safe for concurrent use; several
// processes may open the same file.
type Store struct {
	db   *sql.DB   // readers
	conn *sql.Conn // the one writer connection, owned by the writer goroutine
	path string
	// readOnly: the file could not be written when opened; every write
	// fails with ErrReadOnly.
	readOnly bool
	// elsewhere: the threads of the tools' data are in another store
	// (ThreadsElsewhere).
	elsewhere atomic.Bool

	mu     sync.RWMutex // guards closed against sends on ops
	closed bool
	ops    chan *op
	done   chan struct{} // closed when the writer goroutine has returned

	// vecs are knowledge bases' vectors kept for search (kb_vecindex.go).
	vecs vecCache
}

// Sync says when a commit reaches the disk.
type Sync int

const (
	// SyncFull syncs every commit before reporting it (SQLite
	// synchronous=FULL): a committed item survives a power loss.
	SyncFull Sync = iota
	// SyncNormal syncs at WAL checkpoints only (synchronous=NORMAL): a
	// committed item survives the process being killed, not a power loss.
	SyncNormal
)

// Config configures how a store is opened. The zero value is the default.
type Config struct {
	Sync Sync
}

// EnvPath is the environment variable that overrides the default database
// path.
const EnvPath = "REIN_DB"

// DefaultPath returns where the database lives when no path is given:
// $REIN_DB, else $XDG_DATA_HOME/rein/rein.db, else
// ~/.local/share/rein/rein.db.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	return LocalPath()
}

// LocalPath returns where the database lives on this machine whatever
// $REIN_DB says: $XDG_DATA_HOME/rein/rein.db, else
// ~/.local/share/rein/rein.db. A server whose threads are in PostgreSQL
// keeps the tools' data there.
func LocalPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "rein", "rein.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: no database path: set %s or XDG_DATA_HOME: %w", EnvPath, err)
	}
	return filepath.Join(home, ".local", "share", "rein", "rein.db"), nil
}

// Open opens (creating it if needed) the database at path with the default
// Config; an empty path means DefaultPath.
func Open(ctx context.Context, path string) (*Store, error) {
	return Config{}.Open(ctx, path)
}

// Open opens (creating it if needed) the database at path, an empty path
// meaning DefaultPath, and brings its schema to SchemaVersion.
func (c Config) Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	s, err := c.open(ctx, path)
	if err == nil {
		if err = migrate(ctx, s.conn, SchemaVersion); err != nil {
			s.Close()
		}
	}
	if err != nil {
		if !cannotWrite(err) {
			return nil, err
		}
		// A file that cannot be written (a read-only file system or file)
		// is still read: threads are shown, writes fail with ErrReadOnly.
		ro, rerr := openReadOnly(ctx, path)
		if rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return ro, nil
	}
	s.start()
	return s, nil
}

// createPrivate creates the database file, empty, readable and writable
// by its owner alone, when there is none: SQLite would create it 0644
// (less the umask), and it keeps conversations and the unredacted
// before-images of the files undo can restore. SQLite makes its WAL and
// shared-memory files with the database file's permissions. An existing
// file is left as it is; one that cannot be made (a read-only directory)
// is SQLite's to report.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil
		}
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	return f.Close()
}

// cannotWrite reports whether err says the database file cannot be opened
// for writing or written.
func cannotWrite(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return true
	}
	return false
}

// openReadOnly opens the database to read only: in WAL mode with its
// shared-memory file when that can be made, else as an immutable file (a
// read-only file system, where nobody else can write it either). Its
// schema must be this rein's: there is no migrating what cannot be
// written.
func openReadOnly(ctx context.Context, path string) (*Store, error) {
	var errs []error
	for _, mode := range []string{"mode=ro", "mode=ro&immutable=1"} {
		db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+mode+"&_pragma=busy_timeout(5000)")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var v int
		if err := db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil {
			db.Close()
			errs = append(errs, fmt.Errorf("store: open %s read-only: %w", path, err))
			continue
		}
		if v != SchemaVersion {
			db.Close()
			return nil, fmt.Errorf("store: %s cannot be written and has schema version %d, this rein reads %d: open it once where it can be written, to upgrade it", path, v, SchemaVersion)
		}
		db.SetMaxIdleConns(4)
		conn, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			errs = append(errs, err)
			continue
		}
		s := &Store{db: db, conn: conn, path: path, readOnly: true}
		s.start()
		return s, nil
	}
	return nil, errors.Join(errs...)
}

// open opens the file without migrating it (tests stop at older versions).
func (c Config) open(ctx context.Context, path string) (*Store, error) {
	sync := "FULL"
	if c.Sync == SyncNormal {
		sync = "NORMAL"
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+sync+")")
	// Write transactions take the lock when they begin, so two writers
	// never deadlock upgrading read locks; the busy timeout queues them.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db.SetMaxIdleConns(4)
	conn, err := db.Conn(ctx)
	if err == nil {
		// The first statement opens the file: errors surface here.
		_, err = conn.ExecContext(ctx, `SELECT 1`)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return &Store{db: db, conn: conn, path: path}, nil
}

// ReadOnly reports whether the store was opened to read only, its file
// being impossible to write (Open falls back to reading it).
func (s *Store) ReadOnly() bool { return s.readOnly }

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close waits for the writes in flight, then closes the database. Writes
// after Close fail with ErrClosed. Turns of this process whose end could
// not be written (a full disk) are closed first, if the store can be
// written by now, saying so: the process is not there to say it later.
func (s *Store) Close() error {
	s.recordUnrecorded()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.ops != nil {
		close(s.ops)
	}
	s.mu.Unlock()
	if s.done != nil {
		<-s.done
	}
	return errors.Join(s.conn.Close(), s.db.Close())
}

// recordUnrecorded closes, as failed with their write error, the turns of
// this process whose end could not be written, when the store can be
// written again. Best effort: what fails stays for a later load.
func (s *Store) recordUnrecorded() {
	live.Lock()
	ids := make([]string, 0, len(live.unrecorded))
	for id := range live.unrecorded {
		ids = append(ids, id)
	}
	live.Unlock()
	ctx := context.Background()
	for _, id := range ids {
		var thread string
		if err := s.db.QueryRowContext(ctx, `SELECT thread FROM turns WHERE id = ?`, id).Scan(&thread); err != nil {
			continue
		}
		_ = s.Normalize(ctx, thread)
	}
}
