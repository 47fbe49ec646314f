package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// JobStatus is where a scheduled job stands.
type JobStatus string

// Job statuses.
const (
	JobActive    JobStatus = "active"    // it has a next run
	JobDone      JobStatus = "done"      // it ran for the last time
	JobCancelled JobStatus = "cancelled" // someone cancelled it
)

// Job is a message scheduled into a thread (the cron tool). Exactly one of
// At, Every and Cron says when it runs; the package that schedules it
// computes Next, the store only keeps it.
type Job struct {
	ID      string `json:"id"`
	Thread  string `json:"thread"`
	Name    string `json:"name,omitempty"`
	Message string `json:"message"`
	// At is the time of a one-off job.
	At time.Time `json:"at,omitzero"`
	// Every is the interval of a repeating job.
	Every time.Duration `json:"every,omitempty"`
	// Cron is a five-field cron expression.
	Cron string `json:"cron,omitempty"`
	// TZ is the IANA time zone At and Cron are read in ("" for local).
	TZ string `json:"tz,omitempty"`
	// Once ends a repeating job after its first run.
	Once   bool      `json:"once,omitempty"`
	Status JobStatus `json:"status"`
	// Next is when it runs next; zero when no run is left.
	Next    time.Time `json:"next,omitzero"`
	LastRun time.Time `json:"last_run,omitzero"`
	Runs    int       `json:"runs"`
	Created time.Time `json:"created"`
}

// AddJob stores a new active job for j.Thread, which must exist (else an
// error wrapping ErrNotFound). An empty j.ID gets a fresh id.
func (s *Store) AddJob(ctx context.Context, j Job) (Job, error) {
	if j.ID == "" {
		j.ID = newID("job")
	}
	if j.Next.IsZero() {
		return Job{}, fmt.Errorf("store: job %s has no next run", j.ID)
	}
	j.Status, j.Created, j.Runs, j.LastRun = JobActive, time.Now(), 0, time.Time{}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.checkThread(ctx, tx, j.Thread); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, thread, name, message, at, every, cron, tz, once, status, next_run, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, j.Thread, j.Name, j.Message, nullTime(j.At), nullSeconds(j.Every), j.Cron, j.TZ, j.Once, string(j.Status), nullTime(j.Next), j.Created.UnixNano())
		if isForeignKey(err) {
			return fmt.Errorf("thread %s: %w", j.Thread, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: job %s: %w", j.ID, err)
		}
		return nil
	})
	if err != nil {
		return Job{}, err
	}
	return j, nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func nullSeconds(d time.Duration) any {
	if d == 0 {
		return nil
	}
	return int64(d / time.Second)
}

const jobColumns = `id, thread, name, message, at, every, cron, tz, once, status, next_run, last_run, runs, created`

func scanJob(sc interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var at, every, next, last sql.NullInt64
	var status string
	var created int64
	if err := sc.Scan(&j.ID, &j.Thread, &j.Name, &j.Message, &at, &every, &j.Cron, &j.TZ, &j.Once, &status, &next, &last, &j.Runs, &created); err != nil {
		return Job{}, err
	}
	j.Status, j.Created = JobStatus(status), time.Unix(0, created)
	if at.Valid {
		j.At = time.Unix(0, at.Int64)
	}
	if every.Valid {
		j.Every = time.Duration(every.Int64) * time.Second
	}
	if next.Valid {
		j.Next = time.Unix(0, next.Int64)
	}
	if last.Valid {
		j.LastRun = time.Unix(0, last.Int64)
	}
	return j, nil
}

func (s *Store) queryJobs(ctx context.Context, where string, args ...any) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("store: jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: jobs: %w", err)
	}
	return out, nil
}

// Job returns the job id, or an error wrapping ErrNotFound.
func (s *Store) Job(ctx context.Context, id string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("store: job %s: %w", id, err)
	}
	return j, nil
}

// Jobs returns the jobs of thread ("" for every thread), oldest first:
// only the active ones unless all is set.
func (s *Store) Jobs(ctx context.Context, thread string, all bool) ([]Job, error) {
	return s.queryJobs(ctx, `WHERE (? = '' OR thread = ?) AND (? OR status = 'active') ORDER BY created, id`, thread, thread, all)
}

// DueJobs returns the active jobs whose next run is at or before now,
// earliest first.
func (s *Store) DueJobs(ctx context.Context, now time.Time) ([]Job, error) {
	return s.queryJobs(ctx, `WHERE status = 'active' AND next_run <= ? ORDER BY next_run, id`, now.UnixNano())
}

// NextJobRun returns the earliest next run of an active job; ok is false
// when no job is active.
func (s *Store) NextJobRun(ctx context.Context) (next time.Time, ok bool, err error) {
	var n sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT min(next_run) FROM jobs WHERE status = 'active'`).Scan(&n); err != nil {
		return time.Time{}, false, fmt.Errorf("store: jobs: %w", err)
	}
	if !n.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(0, n.Int64), true, nil
}

// CancelJob cancels the active job id of thread ("" for any thread). A job
// that is not there, not of that thread, or no longer active is an error
// wrapping ErrNotFound.
func (s *Store) CancelJob(ctx context.Context, thread, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'cancelled', next_run = NULL
			WHERE id = ? AND (? = '' OR thread = ?) AND status = 'active'`, id, thread, thread)
		if err != nil {
			return fmt.Errorf("store: cancel job %s: %w", id, err)
		}
		return mustChange(res, "active job "+id)
	})
}

// ClaimRun records that the job id runs now (at ran) for its run due at
// due, and moves it to next (zero: the job is done). It reports false when
// the job's next run is no longer due — another scheduler claimed it, or
// it was cancelled — so each due run is started by one process only.
func (s *Store) ClaimRun(ctx context.Context, id string, due, next, ran time.Time) (bool, error) {
	claimed := false
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		status := JobActive
		if next.IsZero() {
			status = JobDone
		}
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET next_run = ?, last_run = ?, runs = runs + 1, status = ?
			WHERE id = ? AND status = 'active' AND next_run = ?`, nullTime(next), ran.UnixNano(), string(status), id, due.UnixNano())
		if err != nil {
			return fmt.Errorf("store: job %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("store: job %s: %w", id, err)
		}
		claimed = n == 1
		return nil
	})
	return claimed, err
}
