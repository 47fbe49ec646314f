package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Expr is a parsed five-field cron expression: minute, hour, day of month,
// month, day of week. Each field is *, a number, a range a-b, a list a,b,
// any of them with a step /n; months and weekdays may be named (jan, mon).
// As in Vixie cron, when both day fields are restricted a day matching
// either one matches. @yearly, @monthly, @weekly, @daily and @hourly are
// accepted.
type Expr struct {
	src                     string
	min, hour, dom, mon, dw uint64 // bit i set: value i matches
	domStar, dowStar        bool
}

// String returns the expression as written.
func (e *Expr) String() string { return e.src }

var macros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// Parse parses a cron expression; the error says which field is wrong and
// why, for the model to correct.
func Parse(s string) (*Expr, error) {
	src := strings.TrimSpace(s)
	spec := strings.ToLower(src)
	if m, ok := macros[spec]; ok {
		spec = m
	}
	f := strings.Fields(spec)
	if len(f) != 5 {
		return nil, fmt.Errorf("cron expression %q has %d fields; want 5: minute hour day-of-month month day-of-week (e.g. \"0 9 * * 1-5\")", src, len(f))
	}
	e := &Expr{src: src}
	var err error
	fields := []struct {
		name     string
		dst      *uint64
		lo, hi   int
		names    map[string]int
		starFlag *bool
	}{
		{"minute", &e.min, 0, 59, nil, nil},
		{"hour", &e.hour, 0, 23, nil, nil},
		{"day of month", &e.dom, 1, 31, nil, &e.domStar},
		{"month", &e.mon, 1, 12, monthNames, nil},
		{"day of week", &e.dw, 0, 7, dayNames, &e.dowStar},
	}
	for i, fd := range fields {
		*fd.dst, err = parseField(f[i], fd.lo, fd.hi, fd.names)
		if err != nil {
			return nil, fmt.Errorf("cron expression %q, %s field %q: %w", src, fd.name, f[i], err)
		}
		if fd.starFlag != nil {
			*fd.starFlag = strings.HasPrefix(f[i], "*")
		}
	}
	// 7 is Sunday too.
	if e.dw&(1<<7) != 0 {
		e.dw |= 1
	}
	return e, nil
}

func parseField(f string, lo, hi int, names map[string]int) (uint64, error) {
	var bits uint64
	for part := range strings.SplitSeq(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		var a, b int
		switch {
		case rng == "*":
			a, b = lo, hi
		case strings.Contains(rng, "-"):
			x, y, _ := strings.Cut(rng, "-")
			var err error
			if a, err = value(x, lo, hi, names); err != nil {
				return 0, err
			}
			if b, err = value(y, lo, hi, names); err != nil {
				return 0, err
			}
			if a > b {
				return 0, fmt.Errorf("range %d-%d runs backwards", a, b)
			}
		default:
			var err error
			if a, err = value(rng, lo, hi, names); err != nil {
				return 0, err
			}
			b = a
			if hasStep {
				b = hi
			}
		}
		for v := a; v <= b; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func value(s string, lo, hi int, names map[string]int) (int, error) {
	if n, ok := names[s]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, lo, hi)
	}
	return n, nil
}

// searchYears bounds the search for the next match: an expression such as
// "0 0 30 2 *" (February 30th) never matches.
const searchYears = 5

// Next returns the first minute strictly after t, in loc, that the
// expression matches; zero when none comes within five years. A wall time
// that a daylight-saving change skips does not happen that day; one that
// happens twice matches once.
func (e *Expr) Next(t time.Time, loc *time.Location) time.Time {
	// Minutes are whole in every zone, so truncating the instant is safe.
	t = t.In(loc).Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(searchYears, 0, 0)
	for t.Before(limit) {
		switch {
		case e.mon&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !e.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case e.hour&(1<<uint(t.Hour())) == 0:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
		case e.min&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (e *Expr) dayMatches(t time.Time) bool {
	dom := e.dom&(1<<uint(t.Day())) != 0
	dow := e.dw&(1<<uint(t.Weekday())) != 0
	switch {
	case e.domStar && e.dowStar:
		return true
	case e.domStar:
		return dow
	case e.dowStar:
		return dom
	}
	return dom || dow
}
