package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type shoutIn struct {
	Text string `json:"text"`
}

// runTestMCPServer serves one tool, shout, over stdio.
func runTestMCPServer() int {
	s := sdk.NewServer(&sdk.Implementation{Name: "rein-cli-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout", Description: "Say the text louder."},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Text) + "!"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test MCP server:", err)
		return 1
	}
	return 0
}

func TestRunOffersMCPToolsDeferred(t *testing.T) {
	clearKeys(t)
	cfgDir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("[mcp.servers.t]\ncommand = %q\nenv = { REIN_TEST_MCP = \"1\" }\ntrusted = true\n", os.Args[0])
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, `rounds:
  - calls:
      - {id: l1, name: load_tools, args: {names: [t__shout]}}
    expect:
      - tools_include: [load_tools]
      - system: {contains: "t__shout"}
  - calls:
      - {id: s1, name: t__shout, args: {text: hello}}
    expect:
      - tools_include: [t__shout]
  - text: it shouted
    expect:
      - result: {call: s1, contains: "HELLO!"}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--workspace", t.TempDir(), "shout hello")
	if code != ExitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
