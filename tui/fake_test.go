package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
)

// fakeBackend records what the chat asks of it.
type fakeBackend struct {
	mu         sync.Mutex
	calls      []string
	answers    []loop.Answer
	steerErr   error
	threads    []ThreadInfo
	resumeErr  error
	compactErr error
	nextThread int
	// resumeInfo and resumeItems, when set, are what Resume returns.
	resumeInfo  *ThreadInfo
	resumeItems []llm.Item
}

func (f *fakeBackend) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeBackend) NewThread(context.Context) (ThreadInfo, error) {
	f.nextThread++
	t := ThreadInfo{ID: fmt.Sprintf("thread_%d", f.nextThread), Updated: time.Now()}
	f.threads = append(f.threads, t)
	f.record("new %s", t.ID)
	return t, nil
}

func (f *fakeBackend) Resume(_ context.Context, id string) (ThreadInfo, []llm.Item, error) {
	f.record("resume %s", id)
	if f.resumeErr != nil {
		return ThreadInfo{}, nil, f.resumeErr
	}
	if f.resumeInfo != nil {
		return *f.resumeInfo, f.resumeItems, nil
	}
	return ThreadInfo{ID: id}, []llm.Item{llm.UserText("earlier question"), {Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "earlier answer"}}}}, nil
}

func (f *fakeBackend) Threads(context.Context) ([]ThreadInfo, error) {
	return f.threads, nil
}

func (f *fakeBackend) Start(_ context.Context, thread, text string) (string, error) {
	f.record("start %s %s", thread, text)
	return "turn_new", nil
}

func (f *fakeBackend) Queue(_ context.Context, thread, text string) error {
	f.record("queue %s %s", thread, text)
	return nil
}

func (f *fakeBackend) Steer(_ context.Context, thread, turn, text string) (string, error) {
	f.record("steer %s %s %s", thread, turn, text)
	if f.steerErr != nil {
		return "", f.steerErr
	}
	return "steer_" + text, nil
}

func (f *fakeBackend) Interrupt(_ context.Context, thread, turn string) error {
	f.record("interrupt %s %s", thread, turn)
	return nil
}

func (f *fakeBackend) Answer(_ context.Context, thread string, a loop.Answer) error {
	f.record("answer %s %s %s", thread, a.TurnID, a.CallID)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, a)
	return nil
}

func (f *fakeBackend) Compact(_ context.Context, thread string) error {
	f.record("compact %s", thread)
	return f.compactErr
}

func (f *fakeBackend) Subscribe(context.Context, string) (Subscription, error) {
	return &fakeSub{done: make(chan struct{})}, nil
}

func (f *fakeBackend) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// fakeSub never delivers: the tests hand events to the model directly.
type fakeSub struct {
	once sync.Once
	done chan struct{}
}

func (s *fakeSub) Next(ctx context.Context) ([]event.Event, error) {
	select {
	case <-s.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *fakeSub) Close() { s.once.Do(func() { close(s.done) }) }

// clock is a settable time for the double-Esc rule.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func key(code rune) tea.KeyPressMsg      { return tea.KeyPressMsg{Code: code} }
func char(r rune) tea.KeyPressMsg        { return tea.KeyPressMsg{Code: r, Text: string(r)} }
func ctrl(r rune) tea.KeyPressMsg        { return tea.KeyPressMsg{Code: r, Mod: tea.ModCtrl} }

// chat is a model over a fake backend, driven by messages.
type chat struct {
	t     *testing.T
	m     *Model
	be    *fakeBackend
	clock *clock
}

func newChat(t *testing.T) *chat {
	return newChatWith(t, &fakeBackend{}, Options{})
}

// newChatWith is newChat with a backend and options of the test's.
func newChatWith(t *testing.T, be *fakeBackend, opts Options) *chat {
	t.Helper()
	c := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if opts.Model == "" {
		opts.Model = "test:model"
	}
	opts.Now = c.now
	m, err := New(ctx, be, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return &chat{t: t, m: m, be: be, clock: c}
}

// send hands events of the chat's thread to the model.
func (c *chat) send(es ...event.Event) {
	for i := range es {
		if es[i].ThreadID == "" {
			es[i].ThreadID = c.m.thread.ID
		}
		if es[i].Time.IsZero() {
			es[i].Time = c.clock.now()
		}
	}
	c.m.Update(eventsMsg{sub: c.m.sub, events: es})
}

// typeText types text into the input line.
func (c *chat) typeText(s string) {
	for _, r := range s {
		if r == ' ' {
			c.m.Update(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		c.m.Update(char(r))
	}
}

func (c *chat) press(k tea.KeyPressMsg) tea.Cmd {
	_, cmd := c.m.Update(k)
	return cmd
}

// running starts turn id on screen.
func (c *chat) running(id string) {
	c.send(event.Event{Type: event.TurnStarted, TurnID: id}, event.Event{Type: event.RoundStarted, TurnID: id, Round: 1})
}

func (c *chat) view() string { return stripANSI(c.m.View().Content) }

func (c *chat) transcript() string { return strings.Join(c.m.Transcript(), "\n") }

func (c *chat) wantCalls(want ...string) {
	c.t.Helper()
	got := c.be.log()
	// The first call opened the thread.
	got = got[1:]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		c.t.Fatalf("backend calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// lastLine is the footer of a view.
func lastLine(v string) string {
	lines := strings.Split(strings.TrimRight(v, "\n"), "\n")
	return lines[len(lines)-1]
}
