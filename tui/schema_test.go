package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/event"
)

const personSchema = `{"title":"Person","type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`

// TestSchemaCommandAsksTheNextTurnsForJSON: /schema FILE makes the chat's
// next turn ask for the structured answer (the scripted model is offered
// the output's tool and answers with it), and the completed turn shows the
// JSON as a code block; /schema off goes back to text turns.
func TestSchemaCommandAsksTheNextTurnsForJSON(t *testing.T) {
	h := newSessionHarness(t, `rounds:
  - calls: [{name: Person, args: {name: Ada, age: 36}}]
    expect: [{tools_include: [Person]}]
  - text: plain words
    expect: [{tools: []}]
`)
	path := filepath.Join(t.TempDir(), "person.json")
	if err := os.WriteFile(path, []byte(personSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m, err := New(ctx, h.be, Options{Model: "test:model", Thread: h.thread})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	c := &chat{t: t, m: m, clock: newClock()}

	c.typeText("/schema " + path)
	c.press(key(tea.KeyEnter))
	if tr := c.transcript(); !strings.Contains(tr, "answer as JSON matching Person") {
		t.Fatalf("transcript lacks the schema's confirmation:\n%s", tr)
	}
	c.typeText("who?")
	c.press(key(tea.KeyEnter))
	sum := h.completed(1)
	if sum == nil || string(sum.Output) != `{"name":"Ada","age":36}` {
		t.Fatalf("the turn ended %+v, want the structured answer", sum)
	}
	h.mu.Lock()
	evs := append([]event.Event(nil), h.events...)
	h.mu.Unlock()
	c.m.Update(eventsMsg{sub: c.m.sub, events: evs})
	tr := c.transcript()
	if !strings.Contains(tr, `"name": "Ada"`) || !strings.Contains(tr, `"age": 36`) {
		t.Errorf("transcript lacks the answer's JSON block:\n%s", tr)
	}

	c.typeText("/schema off")
	c.press(key(tea.KeyEnter))
	c.typeText("and now?")
	c.press(key(tea.KeyEnter))
	if sum := h.completed(2); sum == nil || sum.Answer != "plain words" || len(sum.Output) != 0 {
		t.Errorf("the second turn ended %+v, want a text answer", sum)
	}
	h.verify()
}

// TestSchemaCommandRefusesABadFile: a missing file, a schema that is not
// an object schema or does not compile, and a file over the bound are
// refused with the reason, and the turns stay text.
func TestSchemaCommandRefusesABadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ name, path, says string }{
		{"missing", filepath.Join(dir, "none.json"), "no such file"},
		{"a list", write("list.json", `{"type":"array"}`), "root must be"},
		{"a bad pattern", write("bad.json", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`), "does not compile"},
		{"too large", write("big.json", `{"type":"object","description":"`+strings.Repeat("x", MaxSchemaFile)+`"}`), "KiB"},
		{"a directory", dir, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSchema(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ReadSchema: %v, want an error saying %q", err, tc.says)
			}
		})
	}
}
