package cron

import (
	"strings"
	"testing"
	"time"
)

func TestParseRefusesBadExpressions(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"* * * *", "has 4 fields"},
		{"60 * * * *", "minute field"},
		{"* 24 * * *", "out of range 0-23"},
		{"* * 0 * *", "day of month field"},
		{"* * * 13 *", "month field"},
		{"* * * * 8", "day of week field"},
		{"5-1 * * * *", "runs backwards"},
		{"*/0 * * * *", "not a positive number"},
		{"x * * * *", `"x" is not a number`},
		{"@sometimes", "has 1 fields"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) err = %v, want %q", tc.expr, err, tc.want)
		}
	}
}

func TestNext(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.ParseInLocation("2006-01-02 15:04", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		expr, from, want string
	}{
		{"0 9 * * *", "2025-06-01 08:59", "2025-06-01 09:00"},
		{"0 9 * * *", "2025-06-01 09:00", "2025-06-02 09:00"},
		{"*/15 * * * *", "2025-06-01 10:07", "2025-06-01 10:15"},
		{"30 8 * * mon-fri", "2025-06-06 09:00", "2025-06-09 08:30"}, // Friday → Monday
		{"0 0 1 jan *", "2025-06-01 00:00", "2026-01-01 00:00"},
		{"@monthly", "2025-01-31 12:00", "2025-02-01 00:00"},
		{"0 12 13 * 5", "2025-06-01 00:00", "2025-06-06 12:00"}, // day 13 or a Friday: Friday the 6th first
		{"0 0 * * 7", "2025-06-01 00:00", "2025-06-08 00:00"},   // 7 is Sunday
		{"0 0 29 2 *", "2025-03-01 00:00", "2028-02-29 00:00"},
		{"30 2 * * *", "2025-03-30 00:00", "2025-03-31 02:30"}, // 02:30 does not exist that night: skipped
		{"30 2 * * *", "2025-10-26 02:31", "2025-10-27 02:30"}, // it happens twice: once
		{"0 0 30 2 *", "2025-01-01 00:00", ""},
	}
	for _, tc := range tests {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		got := e.Next(at(tc.from), paris)
		want := time.Time{}
		if tc.want != "" {
			want = at(tc.want)
		}
		if !got.Equal(want) {
			t.Errorf("%q after %s = %v, want %v", tc.expr, tc.from, got, want)
		}
	}
}
