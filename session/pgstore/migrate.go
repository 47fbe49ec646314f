package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema, in order: migrations[i] takes a database from
// version i to i+1. Only ever appended to: databases out there ran the
// released ones.
var migrations = []string{
	// 1: threads, turns (leased while running), items, steered input and
	// traces.
	`
CREATE TABLE threads (
	id       text PRIMARY KEY,
	created  bigint NOT NULL,             -- unix nanoseconds
	updated  bigint NOT NULL,
	title    text NOT NULL DEFAULT '',
	settings jsonb NOT NULL DEFAULT '{}', -- the thread's settings, workspace and model included
	nitems   bigint NOT NULL DEFAULT 0,   -- items recorded: the next item's seq
	nturns   integer NOT NULL DEFAULT 0   -- turns stored: the next turn's seq
);
CREATE INDEX threads_updated ON threads (updated DESC, id DESC);
CREATE TABLE turns (
	id          text PRIMARY KEY,
	thread      text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq         integer NOT NULL,
	status      text NOT NULL,            -- queued, running, paused, completed, interrupted, failed
	stop_reason text NOT NULL DEFAULT '',
	answer      text NOT NULL DEFAULT '',
	error       text NOT NULL DEFAULT '',
	usage       jsonb NOT NULL DEFAULT '{}',
	cost        double precision NOT NULL DEFAULT 0,
	rounds      integer NOT NULL DEFAULT 0,
	settlement_rounds integer NOT NULL DEFAULT 0,
	tool_steps  integer NOT NULL DEFAULT 0,
	input       text NOT NULL DEFAULT '[]', -- JSON items of a queued turn
	started     bigint NOT NULL,
	ended       bigint,
	pause       text,                       -- JSON record.Pause of a paused turn
	state       text,                       -- JSON loop.State of a paused turn, kept as written
	node        text NOT NULL DEFAULT '',   -- the node holding the lease of a running turn
	fence       bigint NOT NULL DEFAULT 0,  -- the lease's fencing token
	lease_until timestamptz,                -- when the lease expires without a heartbeat
	UNIQUE (thread, seq)
);
-- One running turn per thread, across every node: the database holds it.
CREATE UNIQUE INDEX turns_one_running ON turns (thread) WHERE status = 'running';
CREATE INDEX turns_leases ON turns (lease_until) WHERE status = 'running';
CREATE INDEX turns_queued ON turns (started) WHERE status = 'queued';
CREATE SEQUENCE fences;
CREATE TABLE items (
	thread  text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq     bigint NOT NULL,
	id      text NOT NULL,
	turn    text NOT NULL DEFAULT '',
	role    text NOT NULL,
	origin  text NOT NULL DEFAULT '',
	pending boolean NOT NULL DEFAULT false, -- a pause placeholder: the only item ever replaced
	parts   text NOT NULL,                  -- JSON parts, kept as written
	created bigint NOT NULL,
	PRIMARY KEY (thread, seq),
	UNIQUE (thread, id)
);
CREATE TABLE steers (
	n         bigserial PRIMARY KEY,        -- the order of acceptance
	id        text NOT NULL UNIQUE,
	thread    text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	turn      text NOT NULL,
	item      text NOT NULL,
	created   bigint NOT NULL,
	delivered bigint
);
CREATE INDEX steers_pending ON steers (turn) WHERE delivered IS NULL;
CREATE TABLE trace_events (
	thread text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	seq    bigint NOT NULL,
	turn   text NOT NULL,
	data   text NOT NULL,
	PRIMARY KEY (thread, seq)
);
`,
	// 2: an interrupt asked for on any node, for the node running the
	// turn: the fencing token of the lease it applies to (a turn claimed
	// again under a new lease starts without it).
	`
ALTER TABLE turns ADD COLUMN interrupt_fence bigint NOT NULL DEFAULT 0;
`,
	// 3: sub-agents' threads, linked to the parent thread's turn and call
	// that ran them ('' for a thread a user started).
	`
ALTER TABLE threads ADD COLUMN parent_thread text NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN parent_turn text NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN parent_call text NOT NULL DEFAULT '';
CREATE INDEX threads_parent ON threads (parent_thread) WHERE parent_thread <> '';
`,
	// 4: a turn's structured answer (loop.Outcome.Output), kept for
	// thread/read.
	`
ALTER TABLE turns ADD COLUMN output text NOT NULL DEFAULT ''; -- the JSON object, '' for a text answer
`,
	// 5: the named token (rein serve --token-file) that created each
	// thread; '' for none. A connection with a named token sees only its
	// own threads.
	`
ALTER TABLE threads ADD COLUMN owner text NOT NULL DEFAULT '';
CREATE INDEX threads_owner ON threads (owner, updated, id);
`,
	// 6: the answer to a paused turn, committed with the claim that
	// resumes it (ClaimAnswer) and kept until the turn ends or pauses
	// again: a node that takes the turn over before the answer is
	// recorded resumes it with it.
	`
ALTER TABLE turns ADD COLUMN resume text; -- JSON loop.Answer
`,
	// 7: the structured answer a turn itself asks for (record.Turn.
	// OutputSpec), kept with the turn so that a turn queued on one node,
	// or taken over from a lost one, asks for it on whichever node runs it.
	`
ALTER TABLE turns ADD COLUMN output_spec text NOT NULL DEFAULT ''; -- JSON llm.Output, '' for none
`,
	// 8: that the answer a turn resumes with (resume) began to be carried
	// out (StartAnswer): an approved call is running, so a node taking the
	// turn over does not run it again.
	`
ALTER TABLE turns ADD COLUMN resume_begun boolean NOT NULL DEFAULT false;
`,
	// 9: which nodes are alive (each renews its row with its leases'
	// heartbeat and removes it when it closes or drains), and which node
	// ended each thread's last turn: that node starts the thread's queued
	// turns, and when it is gone another node takes them at once instead
	// of a lease after the thread's last write.
	`
CREATE TABLE nodes (
	node        text PRIMARY KEY,
	alive_until timestamptz NOT NULL
);
ALTER TABLE threads ADD COLUMN queue_node text NOT NULL DEFAULT ''; -- the node that ended the last turn
`,
	// 10: scheduled jobs (the cron tool) of the fleet's threads, shared by
	// the nodes: each due run is claimed by one node (ClaimRun), and a
	// node that drains or dies leaves its jobs to the others.
	`
CREATE TABLE jobs (
	id       text PRIMARY KEY,
	thread   text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	name     text NOT NULL DEFAULT '',
	message  text NOT NULL,
	at       bigint,                   -- unix nanoseconds, for a one-off job
	every    bigint,                   -- seconds, for an interval job
	cron     text NOT NULL DEFAULT '', -- a five-field cron expression
	tz       text NOT NULL DEFAULT '', -- IANA zone of at and cron
	once     boolean NOT NULL DEFAULT false,
	status   text NOT NULL,            -- active, done, cancelled
	next_run bigint,                   -- unix nanoseconds; NULL when no run is left
	last_run bigint,
	runs     integer NOT NULL DEFAULT 0,
	created  bigint NOT NULL
);
CREATE INDEX jobs_due ON jobs (next_run) WHERE status = 'active';
CREATE INDEX jobs_thread ON jobs (thread, created);
`,
}

// SchemaVersion is the schema version this package writes: the number of
// migrations.
const SchemaVersion = 10

// migrationLock is the advisory lock nodes starting at once take, so each
// migration runs once.
const migrationLock = 0x7265696e // "rein"

// migrate brings the database to SchemaVersion, one transaction per
// migration.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		done, err := migrateOne(ctx, pool)
		if err != nil || done {
			return err
		}
	}
}

func migrateOne(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return false, fmt.Errorf("pgstore: migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS rein_schema (version integer NOT NULL)`); err != nil {
		return false, fmt.Errorf("pgstore: migrate: %w", err)
	}
	v, err := version(ctx, tx)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := tx.Exec(ctx, `INSERT INTO rein_schema (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("pgstore: migrate: %w", err)
		}
	} else if err != nil {
		return false, err
	}
	if v > len(migrations) {
		return false, fmt.Errorf("%w (database version %d, this rein knows %d)", ErrSchemaTooNew, v, len(migrations))
	}
	if v == len(migrations) {
		return true, nil
	}
	if _, err := tx.Exec(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("pgstore: migration %d: %w", v+1, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE rein_schema SET version = $1`, v+1); err != nil {
		return false, fmt.Errorf("pgstore: migration %d: %w", v+1, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("pgstore: migration %d: %w", v+1, err)
	}
	return false, nil
}

func version(ctx context.Context, q pgx.Tx) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM rein_schema`).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("pgstore: schema version: %w", err)
	}
	return v, err
}

// Version connects to the database at url and returns its schema version
// without migrating it (0: rein never ran there): what rein doctor checks.
func Version(ctx context.Context, url string) (int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("pgstore: connect: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('rein_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("pgstore: schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT version FROM rein_schema`).Scan(&v); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("pgstore: schema version: %w", err)
	}
	return v, nil
}
