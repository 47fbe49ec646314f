package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema, in order: migrations[i] takes a database from
// version i to version i+1. They are only ever appended to; a released
// migration is never edited, because databases out there already ran it.
var migrations = []string{
	// 1: threads, their turns, and the items of their history.
	`
CREATE TABLE threads (
	id        TEXT PRIMARY KEY,
	created   INTEGER NOT NULL,           -- unix nanoseconds
	updated   INTEGER NOT NULL,
	title     TEXT NOT NULL DEFAULT '',   -- the first user message, shortened
	workspace TEXT NOT NULL DEFAULT '',
	model     TEXT NOT NULL DEFAULT '',   -- provider:model
	settings  TEXT NOT NULL DEFAULT '{}'  -- JSON Settings, approved tools included
);
CREATE TABLE turns (
	id          TEXT PRIMARY KEY,
	thread      TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq         INTEGER NOT NULL,         -- 1, 2, … within the thread
	status      TEXT NOT NULL,            -- queued, running, completed, paused, interrupted, failed
	stop_reason TEXT NOT NULL DEFAULT '',
	answer      TEXT NOT NULL DEFAULT '',
	error       TEXT NOT NULL DEFAULT '',
	usage       TEXT NOT NULL DEFAULT '{}',
	cost        REAL NOT NULL DEFAULT 0,
	rounds      INTEGER NOT NULL DEFAULT 0,
	settlement_rounds INTEGER NOT NULL DEFAULT 0,
	tool_steps  INTEGER NOT NULL DEFAULT 0,
	input       TEXT NOT NULL DEFAULT '[]', -- JSON []llm.Item of a turn not started yet (queued)
	started     INTEGER NOT NULL,
	ended       INTEGER,
	owner       TEXT NOT NULL DEFAULT '', -- host:pid of the process running it
	UNIQUE (thread, seq)
);
-- Items are clustered by thread so loading a thread reads one range.
CREATE TABLE items (
	thread  TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,             -- position in the thread's history
	id      TEXT NOT NULL,
	turn    TEXT NOT NULL DEFAULT '',
	role    TEXT NOT NULL,
	origin  TEXT NOT NULL DEFAULT '',
	pending INTEGER NOT NULL DEFAULT 0,   -- a pause placeholder: the only item ever replaced
	parts   TEXT NOT NULL,                -- JSON []llm.Part
	created INTEGER NOT NULL,
	PRIMARY KEY (thread, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX items_id ON items (thread, id);
`,
	// 2: pauses, resumable in another process.
	`
ALTER TABLE turns ADD COLUMN state TEXT; -- JSON loop.State of a paused turn
CREATE TABLE pauses (
	turn     TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
	call_id  TEXT NOT NULL,
	pause    TEXT NOT NULL,               -- JSON loop.Pause
	created  INTEGER NOT NULL,
	answered INTEGER,                     -- set when the turn moves on
	PRIMARY KEY (turn, call_id)
);
`,
	// 3: steered input waiting for its turn's next model request, and the
	// index that lists threads newest first.
	`
CREATE TABLE steers (
	id        TEXT PRIMARY KEY,           -- the item id it is recorded under
	thread    TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	turn      TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
	item      TEXT NOT NULL,              -- JSON llm.Item
	created   INTEGER NOT NULL,
	delivered INTEGER                     -- set when the item is recorded
);
CREATE INDEX steers_turn ON steers (turn) WHERE delivered IS NULL;
CREATE INDEX threads_updated ON threads (updated DESC, id DESC);
CREATE INDEX turns_running ON turns (thread) WHERE status = 'running';
`,
	// 4: knowledge bases (chunks searched with FTS5 and BM25), the user's
	// memory, notebooks of records, and scheduled jobs (cron).
	`
CREATE TABLE kbs (
	name    TEXT PRIMARY KEY,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
);
CREATE TABLE kb_files (
	id     INTEGER PRIMARY KEY,
	kb     TEXT NOT NULL REFERENCES kbs(name) ON DELETE CASCADE,
	path   TEXT NOT NULL,                 -- as shown in references
	size   INTEGER NOT NULL,
	mtime  INTEGER NOT NULL,
	hash   TEXT NOT NULL,                 -- of the content, to skip unchanged files
	added  INTEGER NOT NULL,
	UNIQUE (kb, path)
);
CREATE TABLE kb_chunks (
	id         INTEGER PRIMARY KEY,       -- the rowid of its text in kb_text
	file       INTEGER NOT NULL REFERENCES kb_files(id) ON DELETE CASCADE,
	start_line INTEGER NOT NULL,
	end_line   INTEGER NOT NULL
);
CREATE INDEX kb_chunks_file ON kb_chunks (file);
-- The chunks' text, indexed; rows are deleted with their chunks by the code
-- that deletes chunks (FTS5 tables take no foreign keys).
CREATE VIRTUAL TABLE kb_text USING fts5(text, tokenize = 'porter unicode61');
CREATE TABLE memory (
	id      INTEGER PRIMARY KEY AUTOINCREMENT, -- shown as m<id>; never reused
	text    TEXT NOT NULL,
	norm    TEXT NOT NULL UNIQUE,          -- text folded for finding duplicates
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
);
CREATE TABLE notebooks (
	id      TEXT PRIMARY KEY,
	name    TEXT NOT NULL UNIQUE,
	created INTEGER NOT NULL
);
CREATE TABLE notes (
	id       INTEGER PRIMARY KEY AUTOINCREMENT, -- shown as r<id>
	notebook TEXT NOT NULL REFERENCES notebooks(id) ON DELETE CASCADE,
	title    TEXT NOT NULL DEFAULT '',
	content  TEXT NOT NULL,
	thread   TEXT NOT NULL DEFAULT '',   -- where it was written; notes outlive threads
	created  INTEGER NOT NULL,
	updated  INTEGER NOT NULL
);
CREATE INDEX notes_notebook ON notes (notebook, id);
CREATE TABLE jobs (
	id         TEXT PRIMARY KEY,
	thread     TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	name       TEXT NOT NULL DEFAULT '',
	message    TEXT NOT NULL,
	at         INTEGER,                  -- unix nanoseconds, for a one-off job
	every      INTEGER,                  -- seconds, for an interval job
	cron       TEXT NOT NULL DEFAULT '', -- a five-field cron expression
	tz         TEXT NOT NULL DEFAULT '', -- IANA zone of at and cron
	once       INTEGER NOT NULL DEFAULT 0, -- delete after its first run
	status     TEXT NOT NULL,            -- active, done, cancelled
	next_run   INTEGER,                  -- unix nanoseconds; NULL when no run is left
	last_run   INTEGER,
	runs       INTEGER NOT NULL DEFAULT 0,
	created    INTEGER NOT NULL
);
CREATE INDEX jobs_due ON jobs (next_run) WHERE status = 'active';
CREATE INDEX jobs_thread ON jobs (thread, created);
`,
	// 5: a turn's trace: its events without the streamed deltas, for
	// `rein trace THREAD` (timings the items do not hold).
	`
CREATE TABLE trace_events (
	thread TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq    INTEGER NOT NULL,
	turn   TEXT NOT NULL,
	data   TEXT NOT NULL,             -- the event as JSON
	PRIMARY KEY (thread, seq)
);
`,
	// 6: embeddings of knowledge bases: the model a base is embedded with,
	// and each chunk's vector, searched by cosine beside BM25.
	`
CREATE TABLE kb_embed (
	kb    TEXT PRIMARY KEY REFERENCES kbs(name) ON DELETE CASCADE,
	model TEXT NOT NULL,              -- provider:model of the embeddings endpoint
	dims  INTEGER NOT NULL DEFAULT 0  -- the vectors' length, 0 until the first
);
CREATE TABLE kb_vectors (
	chunk INTEGER PRIMARY KEY REFERENCES kb_chunks(id) ON DELETE CASCADE,
	vec   BLOB NOT NULL               -- float32 little-endian, unit length
);
`,
	// 7: what each turn changed in the workspace, for undo: the
	// before-image of each file it first touched and a hash of what it
	// left (package undo).
	`
CREATE TABLE undo_entries (
	thread    TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	turn      TEXT NOT NULL,
	seq       INTEGER NOT NULL,          -- order of first touch in the thread
	kind      TEXT NOT NULL,             -- file, exec
	path      TEXT NOT NULL DEFAULT '',  -- workspace-relative; '' for exec
	existed   INTEGER NOT NULL DEFAULT 0,
	before    BLOB,                      -- the content before the turn
	mode      INTEGER NOT NULL DEFAULT 0,
	too_large INTEGER NOT NULL DEFAULT 0, -- before was over the bound, not kept
	after     TEXT NOT NULL DEFAULT '',  -- SHA-256 of what the turn left; '' for no file
	undone    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (thread, turn, kind, path)
);
CREATE INDEX undo_entries_thread ON undo_entries (thread, seq);
`,
	// 8: memory entries and notebooks have a scope, as Claude Code keeps
	// project and user memory: a workspace's (its directory, links
	// resolved) or the user's (''). What was saved before is the user's,
	// as it was seen from every workspace. The tables are rebuilt, since a
	// column's UNIQUE cannot be dropped; ids and their counters are kept.
	`
CREATE TABLE memory_new (
	id        INTEGER PRIMARY KEY AUTOINCREMENT, -- shown as m<id>; never reused
	workspace TEXT NOT NULL DEFAULT '',   -- the workspace's directory; '' for the user's
	text      TEXT NOT NULL,
	norm      TEXT NOT NULL,              -- text folded for finding duplicates
	created   INTEGER NOT NULL,
	updated   INTEGER NOT NULL,
	UNIQUE (workspace, norm)
);
INSERT INTO memory_new (id, workspace, text, norm, created, updated)
	SELECT id, '', text, norm, created, updated FROM memory;
DELETE FROM sqlite_sequence WHERE name = 'memory_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'memory_new', seq FROM sqlite_sequence WHERE name = 'memory';
DROP TABLE memory;
ALTER TABLE memory_new RENAME TO memory;

CREATE TABLE notebooks_new (
	id        TEXT PRIMARY KEY,
	workspace TEXT NOT NULL DEFAULT '',   -- the workspace's directory; '' for the user's
	name      TEXT NOT NULL,
	created   INTEGER NOT NULL,
	UNIQUE (workspace, name)
);
INSERT INTO notebooks_new (id, workspace, name, created) SELECT id, '', name, created FROM notebooks;
CREATE TABLE notes_new (
	id       INTEGER PRIMARY KEY AUTOINCREMENT, -- shown as r<id>
	notebook TEXT NOT NULL REFERENCES notebooks_new(id) ON DELETE CASCADE,
	title    TEXT NOT NULL DEFAULT '',
	content  TEXT NOT NULL,
	thread   TEXT NOT NULL DEFAULT '',   -- where it was written; notes outlive threads
	created  INTEGER NOT NULL,
	updated  INTEGER NOT NULL
);
INSERT INTO notes_new (id, notebook, title, content, thread, created, updated)
	SELECT id, notebook, title, content, thread, created, updated FROM notes;
DELETE FROM sqlite_sequence WHERE name = 'notes_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'notes_new', seq FROM sqlite_sequence WHERE name = 'notes';
DROP TABLE notes;
DROP TABLE notebooks;
ALTER TABLE notebooks_new RENAME TO notebooks;
ALTER TABLE notes_new RENAME TO notes;
CREATE INDEX notes_notebook ON notes (notebook, id);
`,
	// 9: scheduled jobs and undo entries name their thread without a
	// foreign key: a server whose threads are in PostgreSQL keeps its
	// tools' data here, for threads this file does not hold
	// (Store.ThreadsElsewhere). DeleteThread deletes them itself.
	`
CREATE TABLE jobs_new (
	id         TEXT PRIMARY KEY,
	thread     TEXT NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	message    TEXT NOT NULL,
	at         INTEGER,
	every      INTEGER,
	cron       TEXT NOT NULL DEFAULT '',
	tz         TEXT NOT NULL DEFAULT '',
	once       INTEGER NOT NULL DEFAULT 0,
	status     TEXT NOT NULL,
	next_run   INTEGER,
	last_run   INTEGER,
	runs       INTEGER NOT NULL DEFAULT 0,
	created    INTEGER NOT NULL
);
INSERT INTO jobs_new SELECT id, thread, name, message, at, every, cron, tz, once, status, next_run, last_run, runs, created FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_due ON jobs (next_run) WHERE status = 'active';
CREATE INDEX jobs_thread ON jobs (thread, created);
CREATE TABLE undo_new (
	thread    TEXT NOT NULL,
	turn      TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	kind      TEXT NOT NULL,
	path      TEXT NOT NULL DEFAULT '',
	existed   INTEGER NOT NULL DEFAULT 0,
	before    BLOB,
	mode      INTEGER NOT NULL DEFAULT 0,
	too_large INTEGER NOT NULL DEFAULT 0,
	after     TEXT NOT NULL DEFAULT '',
	undone    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (thread, turn, kind, path)
);
INSERT INTO undo_new SELECT thread, turn, seq, kind, path, existed, before, mode, too_large, after, undone FROM undo_entries;
DROP TABLE undo_entries;
ALTER TABLE undo_new RENAME TO undo_entries;
CREATE INDEX undo_entries_thread ON undo_entries (thread, seq);
`,
	// 10: sub-agents' threads, linked to the parent thread's turn and call
	// that ran them ('' for a thread a user started).
	`
ALTER TABLE threads ADD COLUMN parent_thread TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN parent_turn TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN parent_call TEXT NOT NULL DEFAULT '';
CREATE INDEX threads_parent ON threads (parent_thread) WHERE parent_thread <> '';
`,
	// 11: a turn's structured answer (loop.Outcome.Output), kept for
	// thread/read.
	`
ALTER TABLE turns ADD COLUMN output TEXT NOT NULL DEFAULT ''; -- the JSON object, '' for a text answer
`,
	// 12: the named token (rein serve --token-file) that created each
	// thread; '' for none. A connection with a named token sees only its
	// own threads.
	`
ALTER TABLE threads ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX threads_owner ON threads (owner, updated, id);
`,
	// 13: the structured answer a turn itself asks for (record.Turn.
	// OutputSpec), kept with the turn so that a queued turn asks for it
	// when it starts, in this process or after a restart.
	`
ALTER TABLE turns ADD COLUMN output_spec TEXT NOT NULL DEFAULT ''; -- JSON llm.Output, '' for none
`,
}

// SchemaVersion is the schema version this package writes: the number of
// migrations (a test holds the two together).
const SchemaVersion = 13

// migrate brings the database on conn to version target, one transaction
// per migration, so a failure leaves it at the last version reached.
func migrate(ctx context.Context, conn *sql.Conn, target int) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("store: schema_version: %w", err)
	}
	for {
		done, err := migrateOne(ctx, conn, target)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne runs the next migration below target; done reports that there
// was none to run.
func migrateOne(ctx context.Context, conn *sql.Conn, target int) (done bool, err error) {
	// BEGIN IMMEDIATE (the connection's _txlock): two processes opening a
	// fresh database at once run each migration once.
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err {
	case nil:
	case sql.ErrNoRows:
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("store: migrate: %w", err)
		}
	default:
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	if v > len(migrations) {
		return false, fmt.Errorf("%w (database version %d, this rein knows %d)", ErrSchemaTooNew, v, len(migrations))
	}
	if v >= target {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("store: migration %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v+1); err != nil {
		return false, fmt.Errorf("store: migration %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: migration %d: %w", v+1, err)
	}
	return false, nil
}
