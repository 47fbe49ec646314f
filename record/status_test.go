package record

import "testing"

func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		s           Status
		valid, done bool
	}{
		{StatusQueued, true, false},
		{StatusRunning, true, false},
		{StatusPaused, true, false},
		{StatusCompleted, true, true},
		{StatusInterrupted, true, true},
		{StatusFailed, true, true},
		// The protocol's spelling of running is not a stored status.
		{"inProgress", false, false},
		{"", false, false},
	} {
		if got := tt.s.Valid(); got != tt.valid {
			t.Errorf("%q.Valid() = %v, want %v", tt.s, got, tt.valid)
		}
		if got := tt.s.Done(); got != tt.done {
			t.Errorf("%q.Done() = %v, want %v", tt.s, got, tt.done)
		}
	}
}
