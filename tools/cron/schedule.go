package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones by name wherever rein runs

	"github.com/reinhq/rein/store"
)

// MinEvery is the shortest interval of a repeating job.
const MinEvery = 30 * time.Second

// maxMissedCount bounds the count of missed runs reported for a job.
const maxMissedCount = 10_000

// location returns the zone named tz; "" is the local zone.
func location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("tz %q is not a known time zone; use an IANA name such as Europe/Paris or UTC", tz)
	}
	return loc, nil
}

// parseAt reads an ISO 8601 time: with an offset (2025-06-01T09:00:00+02:00
// or …Z) it is that instant; without one it is a wall time in loc.
func parseAt(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at %q is not an ISO 8601 time; write e.g. 2025-06-01T09:00:00+02:00, or 2025-06-01T09:00 with tz", s)
}

// first returns the first run of j from now, checking that j says when it
// runs in exactly one way and that it can run.
func first(j store.Job, now time.Time) (time.Time, error) {
	ways := 0
	for _, set := range []bool{!j.At.IsZero(), j.Every != 0, j.Cron != ""} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return time.Time{}, errors.New("say when in exactly one way: at (one time), every_seconds (repeating) or cron_expr")
	}
	switch {
	case !j.At.IsZero():
		if !j.At.After(now) {
			return time.Time{}, fmt.Errorf("at %s is in the past (it is now %s)", j.At.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		return j.At, nil
	case j.Every != 0:
		if j.Every < MinEvery {
			return time.Time{}, fmt.Errorf("every_seconds %d is too often; the minimum is %d", int(j.Every/time.Second), int(MinEvery/time.Second))
		}
		return now.Add(j.Every), nil
	}
	e, err := Parse(j.Cron)
	if err != nil {
		return time.Time{}, err
	}
	loc, err := location(j.TZ)
	if err != nil {
		return time.Time{}, err
	}
	next := e.Next(now, loc)
	if next.IsZero() {
		return time.Time{}, fmt.Errorf("cron expression %q never matches a date", j.Cron)
	}
	return next, nil
}

// after returns the first run of j strictly after now, given the run that
// was due at due, and how many scheduled runs fell in (due, now] — runs
// missed beyond the one at due. Zero next means j has no run left.
func after(j store.Job, due, now time.Time) (next time.Time, skipped int) {
	if !j.At.IsZero() || j.Once {
		return time.Time{}, 0
	}
	if j.Every != 0 {
		// Keep the job's phase: the next run is the first of due + k·every
		// after now.
		k := int64(now.Sub(due)/j.Every) + 1
		return due.Add(time.Duration(k) * j.Every), int(min(k-1, maxMissedCount))
	}
	e, err := Parse(j.Cron)
	if err != nil {
		return time.Time{}, 0
	}
	loc, err := location(j.TZ)
	if err != nil {
		return time.Time{}, 0
	}
	next = e.Next(due, loc)
	for !next.IsZero() && !next.After(now) {
		if skipped < maxMissedCount {
			skipped++
			next = e.Next(next, loc)
			continue
		}
		next = e.Next(now, loc)
	}
	return next, skipped
}

// describe says when j runs, for people and models.
func describe(j store.Job) string {
	tz := ""
	if j.TZ != "" {
		tz = " " + j.TZ
	}
	switch {
	case !j.At.IsZero():
		return "once at " + j.At.Format(time.RFC3339)
	case j.Every != 0:
		return fmt.Sprintf("every %ds", int(j.Every/time.Second))
	default:
		return "cron " + j.Cron + tz
	}
}
