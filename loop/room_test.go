package loop

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/llm"
)

// A new turn's context has room for a few short turns and a sixteenth of
// the thread, not a fixed 128 items: a turn on a short thread allocated
// and zeroed mostly room, and a 1,000-round thread's turn copied 6 % more
// than its context.
func TestATurnsContextHasRoomForShortTurnsAndAShareOfTheThread(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 100, 2001} {
		h := make([]llm.Item, n)
		for i := range h {
			h[i] = llm.UserText(fmt.Sprint(i))
		}
		got := contextOf(h)
		if len(got) != n {
			t.Fatalf("%d items: context of %d", n, len(got))
		}
		if want := n + 16 + n/16; cap(got) != want {
			t.Errorf("%d items: room for %d, want %d", n, cap(got)-n, want-n)
		}
	}
}
