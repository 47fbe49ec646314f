package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
)

// The scheduled jobs of the fleet's threads (the cron tool) live here, in
// the shape of package store's (store.Job), so that every node sees them:
// each due run is claimed by one node only (ClaimRun), and the jobs of a
// node that drains or dies run on the others. The methods are those of
// cron.Store and cron.Queue.

const jobColumns = `id, thread, name, message, at, every, cron, tz, once, status, next_run, last_run, runs, created`

// AddJob stores a new active job for j.Thread, which must exist (else an
// error wrapping store.ErrNotFound). An empty j.ID gets a fresh id.
func (s *Store) AddJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.ID == "" {
		j.ID = "job_" + strings.ToLower(rand.Text()[:16])
	}
	if j.Next.IsZero() {
		return store.Job{}, fmt.Errorf("pgstore: job %s has no next run", j.ID)
	}
	j.Status, j.Created, j.Runs, j.LastRun = store.JobActive, time.Now(), 0, time.Time{}
	tag, err := s.pool.Exec(ctx, `INSERT INTO jobs (id, thread, name, message, at, every, cron, tz, once, status, next_run, created)
SELECT $1, id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM threads WHERE id = $2`,
		j.ID, j.Thread, j.Name, j.Message, nanos(j.At), seconds(j.Every), j.Cron, j.TZ, j.Once, string(j.Status), nanos(j.Next), j.Created.UnixNano())
	if err != nil {
		return store.Job{}, fmt.Errorf("pgstore: job %s: %w", j.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return store.Job{}, fmt.Errorf("thread %s: %w", j.Thread, store.ErrNotFound)
	}
	return j, nil
}

// Job returns the job id, or an error wrapping store.ErrNotFound.
func (s *Store) Job(ctx context.Context, id string) (store.Job, error) {
	jobs, err := s.queryJobs(ctx, `WHERE id = $1`, id)
	if err != nil {
		return store.Job{}, err
	}
	if len(jobs) == 0 {
		return store.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return jobs[0], nil
}

// Jobs returns the jobs of thread ("" for every thread), oldest first:
// only the active ones unless all is set.
func (s *Store) Jobs(ctx context.Context, thread string, all bool) ([]store.Job, error) {
	return s.queryJobs(ctx, `WHERE ($1 = '' OR thread = $1) AND ($2 OR status = 'active') ORDER BY created, id`, thread, all)
}

// DueJobs returns the active jobs whose next run is at or before now,
// earliest first.
func (s *Store) DueJobs(ctx context.Context, now time.Time) ([]store.Job, error) {
	return s.queryJobs(ctx, `WHERE status = 'active' AND next_run <= $1 ORDER BY next_run, id`, now.UnixNano())
}

// NextJobRun returns the earliest next run of an active job; ok is false
// when no job is active.
func (s *Store) NextJobRun(ctx context.Context) (next time.Time, ok bool, err error) {
	var n *int64
	if err := s.pool.QueryRow(ctx, `SELECT min(next_run) FROM jobs WHERE status = 'active'`).Scan(&n); err != nil {
		return time.Time{}, false, fmt.Errorf("pgstore: jobs: %w", err)
	}
	if n == nil {
		return time.Time{}, false, nil
	}
	return time.Unix(0, *n), true, nil
}

// CancelJob cancels the active job id of thread ("" for any thread). A job
// that is not there, not of that thread, or no longer active is an error
// wrapping store.ErrNotFound.
func (s *Store) CancelJob(ctx context.Context, thread, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET status = 'cancelled', next_run = NULL
WHERE id = $1 AND ($2 = '' OR thread = $2) AND status = 'active'`, id, thread)
	if err != nil {
		return fmt.Errorf("pgstore: cancel job %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("active job %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ClaimRun records that the job id runs now (at ran) for its run due at
// due, and moves it to next (zero: the job is done), in one conditional
// update. It reports false when the job's next run is no longer due:
// another node claimed it, or it was cancelled. So each due run is
// started by one node of the fleet only.
func (s *Store) ClaimRun(ctx context.Context, id string, due, next, ran time.Time) (bool, error) {
	status := store.JobActive
	if next.IsZero() {
		status = store.JobDone
	}
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET next_run = $1, last_run = $2, runs = runs + 1, status = $3
WHERE id = $4 AND status = 'active' AND next_run = $5`, nanos(next), ran.UnixNano(), string(status), id, due.UnixNano())
	if err != nil {
		return false, fmt.Errorf("pgstore: job %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) queryJobs(ctx context.Context, where string, args ...any) ([]store.Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: jobs: %w", err)
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		var j store.Job
		var at, every, next, last *int64
		var created int64
		var status string
		if err := rows.Scan(&j.ID, &j.Thread, &j.Name, &j.Message, &at, &every, &j.Cron, &j.TZ, &j.Once, &status, &next, &last, &j.Runs, &created); err != nil {
			return nil, fmt.Errorf("pgstore: jobs: %w", err)
		}
		j.Status, j.Created = store.JobStatus(status), time.Unix(0, created)
		j.At, j.Next, j.LastRun = fromNanos(at), fromNanos(next), fromNanos(last)
		if every != nil {
			j.Every = time.Duration(*every) * time.Second
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return nil, fmt.Errorf("pgstore: jobs: %w", err)
	}
	return out, nil
}

// nanos is a time as stored: unix nanoseconds, NULL for the zero time.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n)
}

// seconds is an interval as stored: whole seconds, NULL for none.
func seconds(d time.Duration) any {
	if d == 0 {
		return nil
	}
	return int64(d / time.Second)
}
