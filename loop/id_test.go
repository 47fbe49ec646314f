package loop

import (
	"regexp"
	"sync"
	"testing"
)

func TestNewIDIsThePrefixAnd16Base32Characters(t *testing.T) {
	re := regexp.MustCompile(`^turn_[a-z2-7]{16}$`)
	for range 3 * idBatch {
		if id := NewID("turn"); !re.MatchString(id) {
			t.Fatalf("NewID(turn) = %q, want turn_ and 16 of [a-z2-7]", id)
		}
	}
}

func TestNewIDsAreUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 5 * idBatch
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], NewID("x"))
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, l := range ids {
		for _, id := range l {
			if seen[id] {
				t.Fatalf("id %s handed out twice", id)
			}
			seen[id] = true
		}
	}
}

func TestNewIDUsesEveryCharacterOfTheAlphabet(t *testing.T) {
	// A batch handed out twice, or bytes left zero, would show as a
	// character never used over many ids.
	used := map[rune]bool{}
	for range 64 * idBatch {
		for _, c := range NewID("x")[2:] {
			used[c] = true
		}
	}
	if len(used) != 32 {
		t.Fatalf("ids used %d characters, want all 32 of the alphabet", len(used))
	}
}
