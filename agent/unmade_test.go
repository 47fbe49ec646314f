package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tools/mcp"
)

// startMCP starts an MCP server of one tool over streamable HTTP and a
// manager connected to it.
func startMCP(t *testing.T) *mcp.Manager {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "fake", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m, err := mcp.Start(t.Context(), []mcp.ServerConfig{{Name: "fake", URL: srv.URL, Trusted: true}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestSetupBeforeTheThreadIsMadeComposesOnce: rein run (and rein chat) set
// a new thread up before making it, to refuse what cannot run; with MCP
// servers the set grows (load_tools), so it is a thread's own, and the
// thread made next composed it all again. The first thread made with the
// same settings now takes the set composed for it; the next thread, which
// must not share a growing set, composes its own.
func TestSetupBeforeTheThreadIsMadeComposesOnce(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	r := scriptedRuntime(t, dir)
	r.c.MCP = startMCP(t)
	defer r.Close()
	setup := func(id string) loop.Options {
		t.Helper()
		o, _, err := r.Setup(t.Context(), record.Thread{ID: id, Settings: record.Settings{Instructions: "be brief"}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	before := setup("")
	if !grows(before.Tools) {
		t.Fatalf("the set has no load_tools: %v", before.Tools.Names())
	}
	again := setup("")
	made := setup("thread_a")
	next := setup("thread_b")
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"a second check before the thread is made reuses the set", again.Tools == before.Tools},
		{"the thread made takes the set composed before it", made.Tools == before.Tools},
		{"its later runs keep it", setup("thread_a").Tools == made.Tools},
		{"another thread has its own growing set", next.Tools != made.Tools && grows(next.Tools)},
		{"a check after the thread took it composes anew", setup("").Tools != made.Tools},
	} {
		if !c.ok {
			t.Errorf("not so: %s", c.name)
		}
	}
}
