package tui

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
)

// floodSub always has a chunk waiting, as a subscription does while an
// answer streams faster than the screen redraws; first, when set, is
// handed over before the chunks.
type floodSub struct {
	chunks int
	first  []event.Event
}

func (s *floodSub) Next(context.Context) ([]event.Event, error) {
	if f := s.first; f != nil {
		s.first = nil
		return f, nil
	}
	s.chunks++
	return []event.Event{{Type: event.TextDelta, TurnID: "turn_1", Delta: "word "}}, nil
}

func (s *floodSub) Close() {}

// TestStreamedEventsAreReadAtMostOnceAFrame: while chunks stream faster
// than the frame rate, past the stream's first frame the chat reads (and
// so updates and draws for) at most one batch of events a frame, so a key pressed meanwhile waits
// behind at most one batch in the event loop rather than a queue of chunk
// updates. Before, each chunk was read and drawn as it came: thousands of
// updates in the time of a few frames.
func TestStreamedEventsAreReadAtMostOnceAFrame(t *testing.T) {
	c := newChat(t)
	c.running("turn_1")
	sub := &floodSub{}
	c.m.sub = sub
	c.m.reading = nil
	read := func() {
		cmd := c.m.waitEvents()
		if cmd == nil {
			t.Fatal("no read was started")
		}
		c.m.Update(cmd())
		// Update started the next read; this loop runs it instead.
		c.m.reading = nil
	}
	// A stream's first frame is not held (TestTheFirstChunkAfterOther…).
	for warm := time.Now(); time.Since(warm) < 2*time.Second/frameRate; {
		read()
	}
	const span = 300 * time.Millisecond
	start := time.Now()
	reads := 0
	for time.Since(start) < span {
		read()
		reads++
	}
	frames := int(time.Since(start)*frameRate/time.Second) + 2
	if reads > frames {
		t.Errorf("%d reads of events in %v, want at most one a frame (%d)", reads, time.Since(start).Round(time.Millisecond), frames)
	}
	if reads < 3 {
		t.Errorf("only %d reads in %v: the stream is held back", reads, span)
	}
}

// TestTheFirstChunkAfterOtherEventsIsReadAtOnce: only reads after streamed
// chunks wait for the frame; after a turn's start (no chunk yet) the
// answer's first chunk is read at once, so pacing adds nothing to the time
// to its first byte.
func TestTheFirstChunkAfterOtherEventsIsReadAtOnce(t *testing.T) {
	c := newChat(t)
	sub := &floodSub{}
	c.m.sub, c.m.reading = sub, nil
	c.m.Update(eventsMsg{sub: sub, events: []event.Event{{Type: event.TurnStarted, ThreadID: c.m.thread.ID, TurnID: "turn_1"}}})
	c.m.reading = nil
	cmd := c.m.waitEvents()
	start := time.Now()
	cmd()
	if d := time.Since(start); d > time.Second/frameRate/2 {
		t.Errorf("the read after the turn's start waited %v", d)
	}
	// The stream's first frame is not held.
	chunk := eventsMsg{sub: sub, events: []event.Event{{Type: event.TextDelta, ThreadID: c.m.thread.ID, TurnID: "turn_1", Delta: "a"}}}
	c.m.Update(chunk)
	c.m.reading = nil
	cmd = c.m.waitEvents()
	start = time.Now()
	cmd()
	if d := time.Since(start); d > time.Second/frameRate/2 {
		t.Errorf("the read after an answer's first chunk waited %v", d)
	}
	// A stream that has lasted a frame is.
	time.Sleep(time.Second / frameRate)
	c.m.Update(chunk)
	c.m.reading = nil
	cmd = c.m.waitEvents()
	start = time.Now()
	cmd()
	if d := time.Since(start); d < time.Second/frameRate/2 {
		t.Errorf("the read after a frame of chunks waited %v, want about a frame", d)
	}
	// A stream just handed over, then a new turn's start: at once (the
	// next answer's first byte is not held by the last one's frame).
	c.m.Update(eventsMsg{sub: sub, events: []event.Event{{Type: event.TextDelta, ThreadID: c.m.thread.ID, TurnID: "turn_1", Delta: "b"}}})
	c.m.reading = nil
	sub.first = []event.Event{{Type: event.TurnStarted, ThreadID: c.m.thread.ID, TurnID: "turn_2"}}
	cmd = c.m.waitEvents()
	start = time.Now()
	cmd()
	if d := time.Since(start); d > time.Second/frameRate/2 {
		t.Errorf("a turn's start after a stream waited %v", d)
	}
}
