package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/mcp"
)

type shoutIn struct {
	Text string `json:"text"`
}

// runTestMCPServer serves two tools over stdio: shout, which its
// annotations do not mark read-only, and whisper, which they do.
func runTestMCPServer() int {
	s := sdk.NewServer(&sdk.Implementation{Name: "rein-cli-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout", Description: "Say the text louder."},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Text) + "!"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "whisper", Description: "Say the text softly.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in shoutIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToLower(in.Text) + "…"}}}, nil, nil
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

// writeMCPConfig writes a config file naming two MCP servers, both the test
// binary: tr, trusted, and un, not.
func writeMCPConfig(t *testing.T) {
	t.Helper()
	cfgDir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("[mcp.servers.tr]\ncommand = %q\nenv = { REIN_TEST_MCP = \"1\" }\ntrusted = true\n\n"+
		"[mcp.servers.un]\ncommand = %q\nenv = { REIN_TEST_MCP = \"1\" }\n", os.Args[0], os.Args[0])
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPToolsBySandboxMode: which MCP tools a turn may load and how their
// calls are approved, by sandbox mode, the server's trust and the tool's
// read-only hint. In read-only mode only the read-only tools of trusted
// servers are offered; the others are withheld — out of the manifest,
// refused by load_tools, and in the report with why. Elsewhere every tool
// is offered, and under on-request an untrusted server's tools ask unless
// they are marked read-only.
func TestMCPToolsBySandboxMode(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	var cfgs []mcp.ServerConfig
	for _, name := range []string{"tr", "un"} {
		cfgs = append(cfgs, mcp.ServerConfig{Name: name, Command: os.Args[0], Env: map[string]string{"REIN_TEST_MCP": "1"}, Trusted: name == "tr"})
	}
	m, err := mcp.Start(t.Context(), cfgs, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, mode := range []string{"read-only", "workspace-write", "full-access"} {
		for _, trusted := range []bool{true, false} {
			for _, hint := range []bool{true, false} {
				srv, tl := "un", "shout"
				if trusted {
					srv = "tr"
				}
				if hint {
					tl = "whisper"
				}
				name := srv + "__" + tl
				offered := mode != "read-only" || trusted && hint
				approval := "allow"
				if !trusted && !hint {
					approval = "ask"
				}
				t.Run(fmt.Sprintf("%s/trusted=%v/readOnlyHint=%v", mode, trusted, hint), func(t *testing.T) {
					f := &toolFlags{capability: defaultCapability, sandbox: mode, approval: "on-request", mcp: m}
					set, rep, _, err := composeTools(t.Context(), ws, f, io.Discard)
					if err != nil {
						t.Fatal(err)
					}
					prompt := f.loaded.Prompt(t.Context(), set, io.Discard)
					var out tool.Output
					if lt, ok := set.Get(mcp.LoadToolsName); ok {
						out, _ = lt.Run(t.Context(), tool.Call{Name: mcp.LoadToolsName, Args: json.RawMessage(`{"names":["` + name + `"]}`)})
					}
					d, listed := rep.Decision(name)
					if !offered {
						if strings.Contains(prompt, name) || strings.Contains(out.Text, "loaded: "+name) {
							t.Errorf("withheld, but in the prompt or loaded:\n%s\n%s", prompt, out.Text)
						}
						if _, ok := set.Get(name); ok {
							t.Error("withheld, but in the set")
						}
						if !listed || d.In || !strings.Contains(d.Reason, "suppressed: the sandbox mode is read-only, and MCP server \""+srv+"\"") {
							t.Errorf("report: %+v (listed %v)", d, listed)
						}
						return
					}
					if !strings.Contains(prompt, name+": ") {
						t.Errorf("offered, but not in the manifest:\n%s", prompt)
					}
					if !strings.Contains(out.Text, "loaded: "+name) {
						t.Errorf("load_tools: %+v", out)
					}
					if listed {
						t.Errorf("an offered MCP tool is in the report's in/out list: %+v", d)
					}
					var got *deferredTool
					for _, dt := range deferredTools(f.offer, tool.PolicyOnRequest) {
						if dt.Name == name {
							got = &dt
						}
					}
					if got == nil || got.Approval != approval || got.Server != srv {
						t.Errorf("deferred: %+v, want approval %q", got, approval)
					}
				})
			}
		}
	}
}

// TestRunReadOnlyWithholdsMCPTools: a read-only run loads the read-only
// tool of the trusted server and calls it; load_tools refuses the other
// server's tool and says why.
func TestRunReadOnlyWithholdsMCPTools(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	writeMCPConfig(t)
	script := writeScript(t, `rounds:
  - calls:
      - {id: l1, name: load_tools, args: {names: [un__shout, tr__whisper, tr__shout]}}
    expect:
      - system: {contains: "tr__whisper: Say the text softly."}
  - calls:
      - {id: w1, name: tr__whisper, args: {text: QUIET}}
    expect:
      - result: {call: l1, contains: "loaded: tr__whisper;"}
      - result: {call: l1, contains: "not available in this turn: un__shout (the sandbox mode is read-only, and MCP server \"un\" is not trusted and does not mark the tool read-only); tr__shout (the sandbox mode is read-only, and MCP server \"tr\" does not mark the tool read-only (readOnlyHint))."}
      - tools_include: [tr__whisper]
  - text: whispered
    expect:
      - result: {call: w1, contains: "quiet…"}
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--sandbox", "read-only", "--model", "scripted:"+script, "--workspace", t.TempDir(), "whisper")
	if code != ExitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestRunApprovalOfMCPTools: in the default mode and policy (workspace-write,
// on-request) a tool an untrusted server does not mark read-only waits for
// approval; a trusted server's runs at once.
func TestRunApprovalOfMCPTools(t *testing.T) {
	clearKeys(t)
	writeMCPConfig(t)
	for _, tt := range []struct {
		tool string
		want int
	}{
		{"un__shout", ExitPaused},
		{"un__whisper", ExitCompleted},
		{"tr__shout", ExitCompleted},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			script := writeScript(t, fmt.Sprintf(`rounds:
  - calls:
      - {id: l1, name: load_tools, args: {names: [%s]}}
  - calls:
      - {id: c1, name: %s, args: {text: Hi}}
  - text: done
`, tt.tool, tt.tool))
			code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--workspace", t.TempDir(), "go")
			if code != tt.want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.want, stdout, stderr)
			}
		})
	}
}

// TestToolsExplainsMCPTools: rein tools lists the deferred MCP tools with
// what the approval policy does with them, and in read-only mode says why
// the others are out.
func TestToolsExplainsMCPTools(t *testing.T) {
	clearKeys(t)
	fakeSandbox(t, true)
	writeMCPConfig(t)
	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"--sandbox", "read-only"},
			[]string{"load_tools mounted: has_deferred_tools",
				`un__shout suppressed: the sandbox mode is read-only, and MCP server "un" is not trusted and does not mark the tool read-only`,
				`un__whisper suppressed: the sandbox mode is read-only, and MCP server "un" is not trusted, so its read-only hint does not count (trusted = true in [mcp.servers.un] makes it count)`,
				`tr__shout suppressed: the sandbox mode is read-only, and MCP server "tr" does not mark the tool read-only (readOnlyHint)`,
				"deferred (listed in the prompt; the model loads them with load_tools):",
				`tr__whisper MCP server "tr": runs without asking (read-only)`},
			nil},
		{nil,
			[]string{`un__shout MCP server "un": asks for your approval`, `un__whisper MCP server "un": runs without asking`,
				`tr__shout MCP server "tr": runs without asking`},
			[]string{"suppressed: the sandbox mode"}},
		{[]string{"--approval", "untrusted"},
			[]string{`un__whisper MCP server "un": asks for your approval`, `tr__whisper MCP server "tr": runs without asking (read-only)`, `tr__shout MCP server "tr": asks for your approval`},
			nil},
		{[]string{"--approval", "never"},
			[]string{`un__shout MCP server "un": refused: it needs approval, which --approval never does not give`},
			nil},
	}
	for _, tt := range tests {
		args := append([]string{"tools", "--workspace", t.TempDir()}, tt.args...)
		code, stdout, stderr := runMain(t, context.Background(), args...)
		if code != ExitCompleted {
			t.Fatalf("%v: exit %d, stderr %s", args, code, stderr)
		}
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, w := range tt.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, stdout)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(flat, w) {
				t.Errorf("%v: output has %q:\n%s", tt.args, w, stdout)
			}
		}
	}
	r := toolsJSON(t, "--sandbox", "read-only")
	if len(r.Deferred) != 1 || r.Deferred[0].Name != "tr__whisper" || r.Deferred[0].Approval != "allow" {
		t.Errorf("deferred in JSON: %+v", r.Deferred)
	}
}
