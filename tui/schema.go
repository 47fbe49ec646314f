package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Structured answers in the chat: /schema FILE (or rein chat --schema FILE)
// makes the next turns ask for their answer as JSON matching the schema,
// shown as a code block when the turn completes; /schema off goes back to
// text answers.

// OutputBackend is a Backend whose turns can ask for a structured answer
// (loop.Options.Output). Session implements it; /schema needs it.
type OutputBackend interface {
	// StartOutput is Start for a turn whose answer is a JSON object
	// matching out's schema.
	StartOutput(ctx context.Context, threadID, text string, out *llm.Output) (string, error)
	// QueueOutput is Queue for such a turn.
	QueueOutput(ctx context.Context, threadID, text string, out *llm.Output) error
}

// MaxSchemaFile bounds the schema file /schema reads: the schema is sent
// to the model with every request of the turn.
const MaxSchemaFile = 64 << 10

// ReadSchema reads the structured answer of the JSON Schema in the file at
// path (an object schema; its title names it, its description says what
// it is): a regular file of at most MaxSchemaFile bytes, whose schema
// compiles.
func ReadSchema(path string) (*llm.Output, error) {
	// Looked at before it is opened: opening a FIFO waits for a writer.
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; give a JSON Schema file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; give a JSON Schema file", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxSchemaFile+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxSchemaFile {
		return nil, fmt.Errorf("%s is over %d KiB; a schema that large is too much to send with every request", path, MaxSchemaFile>>10)
	}
	out, err := llm.OutputFromSchema(raw, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := tool.NewValidator(tool.Spec{Name: out.Name, Schema: out.Schema}); err != nil {
		return nil, fmt.Errorf("%s: the schema does not compile: %w", path, err)
	}
	return out, nil
}

// schemaCommand runs /schema: FILE sets the structured answer of the next
// turns, off clears it, nothing says which one is set.
func (m *Model) schemaCommand(arg string) {
	s := m.styles()
	switch arg {
	case "":
		if m.schema == nil {
			m.commit(s.dim.Render("answers are text; /schema FILE asks the next turns for JSON matching the schema in FILE"))
			return
		}
		m.commit(s.dim.Render(fmt.Sprintf("the next turns answer as JSON matching %s; /schema off goes back to text", m.schema.Name)))
		return
	case "off", "none":
		m.schema = nil
		m.commit(s.dim.Render("answers are text again"))
		return
	}
	if _, ok := m.be.(OutputBackend); !ok {
		m.commit(s.warn.Render("/schema: this chat's backend cannot ask for structured answers"))
		return
	}
	out, err := ReadSchema(arg)
	if err != nil {
		m.commit(s.warn.Render("/schema: " + err.Error()))
		return
	}
	m.schema = out
	m.commit(s.dim.Render(fmt.Sprintf("the next turns answer as JSON matching %s (/schema off goes back to text)", out.Name)))
}

// startTurn starts text as a turn, asking for the structured answer of
// /schema when one is set.
func (m *Model) startTurn(ctx context.Context, text string) (string, error) {
	if ob, ok := m.be.(OutputBackend); ok && m.schema != nil {
		return ob.StartOutput(ctx, m.thread.ID, text, m.schema)
	}
	return m.be.Start(ctx, m.thread.ID, text)
}

// queueTurn queues text as a turn, as startTurn starts it.
func (m *Model) queueTurn(ctx context.Context, text string) error {
	if ob, ok := m.be.(OutputBackend); ok && m.schema != nil {
		return ob.QueueOutput(ctx, m.thread.ID, text, m.schema)
	}
	return m.be.Queue(ctx, m.thread.ID, text)
}

// showOutput commits a completed turn's structured answer as a JSON code
// block.
func (m *Model) showOutput(sum *event.TurnSummary) {
	if sum == nil || len(sum.Output) == 0 {
		return
	}
	var b bytes.Buffer
	if json.Indent(&b, sum.Output, "", "  ") != nil {
		b.Reset()
		b.Write(sum.Output)
	}
	m.commit(m.md.render("```json\n"+b.String()+"\n```", m.width))
}

// StartOutput implements OutputBackend: Start, the turn asking for out.
func (b *Session) StartOutput(ctx context.Context, threadID, text string, out *llm.Output) (string, error) {
	if t, ok, err := b.sched.Active(ctx, threadID); err != nil {
		return "", sessionErr("start", err)
	} else if ok {
		return "", fmt.Errorf("start: %w (turn %s)", ErrBusy, t.ID)
	}
	t, err := b.sched.StartOutput(ctx, threadID, llm.UserText(text), out)
	if err != nil {
		return "", sessionErr("start", err)
	}
	return t.ID, nil
}

// QueueOutput implements OutputBackend: Queue, the turn asking for out.
func (b *Session) QueueOutput(ctx context.Context, threadID, text string, out *llm.Output) error {
	_, err := b.sched.StartOutput(ctx, threadID, llm.UserText(text), out)
	return sessionErr("queue", err)
}

var _ OutputBackend = (*Session)(nil)
