package mcp

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the MCP server the tests talk to: run with
// serverEnv set, it serves testServer on stdin and stdout and exits.
const serverEnv = "REIN_MCP_TEST_SERVER"

// The test server's other switches: callsEnv names a file it appends
// "TOOL PID" to on every call, so tests can count what ran where;
// refuseEnv names a file whose existence makes it exit at start.
const (
	callsEnv  = "REIN_MCP_TEST_CALLS"
	refuseEnv = "REIN_MCP_TEST_REFUSE"
)

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if p := os.Getenv(refuseEnv); p != "" {
			if _, err := os.Stat(p); err == nil {
				fmt.Fprintln(os.Stderr, "test server: starting")
				fmt.Fprintln(os.Stderr, "test server: refusing to start:", p, "exists")
				os.Exit(1)
			}
		}
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stdioConfig is a server config that runs the test binary as the server.
func stdioConfig(t *testing.T, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{serverEnv: "1"}}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type empty struct{}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// logCall appends "TOOL PID" to the file callsEnv names, if any.
func logCall(name string) {
	p := os.Getenv(callsEnv)
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d\n", name, os.Getpid())
}

func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "rein-test", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && method == "tools/call" {
				logCall(p.Name)
			}
			return next(ctx, method, req)
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.\nA second line the manifest leaves out."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the fail tool failed as asked")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "hang: started")
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "exit", Description: "Makes the server exit mid-call."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "exit: the server is going away")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "getenv", Description: "Reads the server's environment."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return text("[" + os.Getenv(in.Text) + "]"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "odd name!", Description: "A name providers refuse."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
			return text("odd"), nil, nil
		})
	return s
}

// httpHandler serves testServer over streamable HTTP.
func httpHandler() http.Handler {
	s := testServer()
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// TestTailReadsWhileWritten: a server's stderr is read for messages while
// the process still writes it, and Write reuses its buffer when it trims.
func TestTailReadsWhileWritten(t *testing.T) {
	tl := &tail{max: 16}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			tl.Write([]byte("line of output\n"))
		}
	}()
	for range 2000 {
		_ = tl.String()
		_ = tl.lastLine()
	}
	<-done
	if got := tl.lastLine(); got != "line of output" {
		t.Errorf("lastLine %q", got)
	}
}
