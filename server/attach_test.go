package server_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

func TestAttachedFilesBecomePartOfTheUsersMessage(t *testing.T) {
	b := newBackend(t)
	b.script("att", scripted.Script{Rounds: []scripted.Round{{Text: "read it", Expect: []scripted.Expect{
		{LastUser: &scripted.TextExpect{Contains: "Summarise this\n\nAttached file \"notes.md\" (25 bytes):\n````\n# Notes\n```go\nx := 1\n```\n````\n"}},
	}}}})
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:att"}, &th)
	// A name with a path keeps its base name; a fence inside the file is
	// outlasted by a longer one.
	in := []protocol.InputPart{{Type: "text", Text: "Summarise this"}, {Type: protocol.InputFile, Name: "../../etc/notes.md", Text: "# Notes\n```go\nx := 1\n```\n"}}
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: in}, &started)
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, nil)
	if done.Turn.Status != "completed" {
		t.Fatalf("the turn with an attachment: %+v", done.Turn)
	}

	file := func(name, text string) protocol.InputPart {
		return protocol.InputPart{Type: protocol.InputFile, Name: name, Text: text}
	}
	many := make([]protocol.InputPart, protocol.MaxAttachments+1)
	for i := range many {
		many[i] = file("a.txt", "a")
	}
	for _, tc := range []struct {
		name string
		in   []protocol.InputPart
		want string
	}{
		{"too large", []protocol.InputPart{file("big.txt", strings.Repeat("x", protocol.MaxAttachmentSize+1))}, "at most 256 KiB"},
		{"binary", []protocol.InputPart{file("a.png", "\x89PNG\x00\x00")}, "not text"},
		{"no name", []protocol.InputPart{file("dir/", "x")}, "needs a name"},
		{"a control character in the name", []protocol.InputPart{file("a\nb", "x")}, "needs a name"},
		{"too many", many, "more than 10"},
		{"an unknown type", []protocol.InputPart{{Type: "image", Text: "x"}}, "text and file"},
	} {
		e := c.callErr(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: tc.in})
		if e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %+v, want invalid params saying %q", tc.name, e, tc.want)
		}
	}
}

func TestThreadReadCarriesTheLatestContextReport(t *testing.T) {
	b := newBackend(t)
	b.script("compactctx", scripted.Script{Rounds: []scripted.Round{{Text: "ok"}}})
	s := b.server(t, server.Config{})
	c := stdioClient(t, s)
	c.initialize()
	var th protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:compactctx"}, &th)
	var read protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
	if read.Context != nil {
		t.Errorf("thread/read before any request: context %+v, want none", read.Context)
	}
	var started protocol.TurnStartResult
	c.call(protocol.MethodTurnStart, protocol.TurnStartParams{ThreadID: th.Thread.ID, Input: text("hi")}, &started)
	var cx protocol.ContextUpdated
	c.until(protocol.NotifyContextUpdated, &cx, nil)
	var done protocol.TurnNotification
	c.until(protocol.NotifyTurnCompleted, &done, nil)

	// Another connection (a reloaded page) reads it with the thread.
	c2 := stdioClient(t, s)
	c2.initialize()
	c2.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: th.Thread.ID}, &read)
	if read.Context == nil || read.Context.Window != 100_000 || read.Context.Window != cx.Context.Window || read.Context.Used != cx.Context.Used {
		t.Errorf("thread/read after a turn: context %+v, want the last context/updated %+v", read.Context, cx.Context)
	}
}
