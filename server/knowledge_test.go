package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/server"
)

// TestThreadStartAttachesKnownKnowledgeBases: initialize lists the bases the
// server knows in defaults; thread/start's knowledgeBases are kept on the
// thread (thread/start, thread/read); a base the server does not know, or
// too many, is -32602 naming the known ones.
func TestThreadStartAttachesKnownKnowledgeBases(t *testing.T) {
	b := newBackend(t)
	known := []string{"docs", "notes"}
	s := b.server(t, server.Config{KnowledgeBases: func(context.Context) ([]string, error) { return known, nil }})
	c := stdioClient(t, s)
	var init protocol.InitializeResult
	c.call(protocol.MethodInitialize, protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "test"}}, &init)
	if init.Defaults == nil || !slices.Equal(init.Defaults.KnowledgeBases, known) {
		t.Fatalf("initialize defaults = %+v, want knowledgeBases %v", init.Defaults, known)
	}

	var started protocol.ThreadResult
	c.call(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"notes", "notes"}}, &started)
	if want := []string{"notes"}; !slices.Equal(started.Thread.KnowledgeBases, want) {
		t.Errorf("thread/start thread.knowledgeBases = %v, want %v", started.Thread.KnowledgeBases, want)
	}
	var read protocol.ThreadReadResult
	c.call(protocol.MethodThreadRead, protocol.ThreadReadParams{ThreadID: started.Thread.ID}, &read)
	if want := []string{"notes"}; !slices.Equal(read.Thread.KnowledgeBases, want) {
		t.Errorf("thread/read thread.knowledgeBases = %v, want %v", read.Thread.KnowledgeBases, want)
	}

	many := make([]string, 17)
	for i := range many {
		many[i] = "docs"
	}
	for _, tc := range []struct {
		name  string
		kbs   []string
		wants []string
	}{
		{"unknown", []string{"docs", "secrets"}, []string{`"secrets"`, "docs, notes"}},
		{"too many", many, []string{"at most 16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := c.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: tc.kbs})
			if e.Code != protocol.CodeInvalidParams {
				t.Errorf("code = %d, want %d (%s)", e.Code, protocol.CodeInvalidParams, e.Message)
			}
			for _, w := range tc.wants {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not say %q", e.Message, w)
				}
			}
		})
	}
}

// TestThreadStartRefusesBasesWithoutAList: a server that lists no bases
// refuses every knowledgeBases, saying none is known.
func TestThreadStartRefusesBasesWithoutAList(t *testing.T) {
	b := newBackend(t)
	c := stdioClient(t, b.server(t, server.Config{}))
	c.initialize()
	e := c.callErr(protocol.MethodThreadStart, protocol.ThreadStartParams{Model: "script:kb", KnowledgeBases: []string{"docs"}})
	if e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "none") {
		t.Errorf("error = %d %q, want -32602 saying none is known", e.Code, e.Message)
	}
}
