package loop

import (
	"strconv"
	"strings"
	"testing"
)

// TestItemIDsAreTheTurnIDAndTheNumber: ids cut from shared blocks are the
// same strings as "<turn id>.<n>" made one at a time, for numbers in
// order, across blocks, after a jump (a resumed turn starts past 1), for
// a turn id too long to share a block, and for many digits.
func TestItemIDsAreTheTurnIDAndTheNumber(t *testing.T) {
	cases := []struct {
		name string
		turn string
		ns   []int
	}{
		{"in order", "turn_abc", seq(1, 60)},
		{"resumed", "turn_abc", append(seq(37, 45), seq(46, 80)...)},
		{"digits", "t", seq(9_995, 10_030)},
		{"long turn id", strings.Repeat("x", maxIDBlockTurn+1), seq(1, 5)},
		{"empty turn id", "", seq(1, 20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b itemIDs
			for _, n := range c.ns {
				if got, want := b.id(c.turn, n), c.turn+"."+strconv.Itoa(n); got != want {
					t.Fatalf("id(%d) = %q, want %q", n, got, want)
				}
			}
		})
	}
}

// TestItemIDsAllocateABlockAtATime: a 50-round turn's hundred ids cost a
// handful of allocations, not one each.
func TestItemIDsAllocateABlockAtATime(t *testing.T) {
	allocs := testing.AllocsPerRun(20, func() {
		var b itemIDs
		for n := 1; n <= 100; n++ {
			_ = b.id("turn_0123456789abcdef", n)
		}
	})
	if allocs > 8 {
		t.Fatalf("100 ids: %.0f allocations, want at most 8", allocs)
	}
}

func seq(from, to int) []int {
	var s []int
	for n := from; n <= to; n++ {
		s = append(s, n)
	}
	return s
}

// BenchmarkItemIDs: the ids of a 50-round turn's 101 items.
func BenchmarkItemIDs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var ids itemIDs
		for n := 1; n <= 101; n++ {
			_ = ids.id("turn_0123456789abcdef", n)
		}
	}
}
