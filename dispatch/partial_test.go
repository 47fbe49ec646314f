package dispatch

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestPartialKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"nothing", 8, nil, ""},
		{"fits", 8, []string{"ab", "cd"}, "abcd"},
		{"exactly the limit", 8, []string{"abcdefgh"}, "abcdefgh"},
		{"one big write", 8, []string{"abcdefghijkl"}, "abcd\n[… 4 bytes omitted …]\nijkl"},
		{"many small writes", 8, []string{"ab", "cd", "ef", "gh", "ij", "kl", "mn"}, "abcd\n[… 6 bytes omitted …]\nklmn"},
		{"a write larger than the tail", 8, []string{"abcd", "e", "0123456789"}, "abcd\n[… 7 bytes omitted …]\n6789"},
		{"cut runes are dropped", 6, []string{"éééé"}, "é\n[… 2 bytes omitted …]\né"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartial(tt.limit)
			for _, w := range tt.writes {
				if n, err := p.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := p.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPartialIsSafeForConcurrentWriters(t *testing.T) {
	p := newPartial(64)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(p, "writer %d\n", i)
			}
		})
	}
	wg.Wait()
	s := p.String()
	if !strings.Contains(s, "omitted") || len(s) > 64+40 {
		t.Errorf("got %d bytes: %q", len(s), s)
	}
}
