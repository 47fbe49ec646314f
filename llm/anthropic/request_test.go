package anthropic

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

var (
	callWeather = &llm.Call{ID: "toolu_1", Name: "weather", Args: `{"location":"Florence"}`}
	callAdd     = &llm.Call{ID: "toolu_2", Name: "add", Args: `{"a":2,"b":3}`}
)

// TestRequestWireFormat compares the JSON sent for a request with a golden
// file, and checks it against the mock server's reading of the API's rules.
func TestRequestWireFormat(t *testing.T) {
	temp := 0.2
	cases := []struct {
		name string
		opts Options
		req  llm.Request
	}{
		{
			name: "results lead the merged user message",
			req: llm.Request{
				System: "You are terse.",
				Items: []llm.Item{
					llm.UserText("Weather in Florence, and 2+3?"),
					{Role: llm.RoleAssistant, Parts: []llm.Part{
						{Kind: llm.PartReasoning, Text: "Two tools.", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "sig-A"}},
						{Kind: llm.PartText, Text: "Checking both."},
						{Kind: llm.PartCall, Call: callWeather},
						{Kind: llm.PartCall, Call: callAdd},
					}},
					llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
					llm.Directive("Be brief."),
					llm.ToolResult(llm.Result{CallID: "toolu_2", Name: "add", Content: "tool failed: overflow", Status: llm.ResultError}),
				},
				Tools:         weatherTools,
				ParallelCalls: true,
			},
		},
		{
			name: "text tool mode describes the tools and sends calls and results as text",
			opts: Options{TextTools: true},
			req: llm.Request{
				System: "You are terse.",
				Items: []llm.Item{
					llm.UserText("Weather in Florence, and 2+3?"),
					{Role: llm.RoleAssistant, Parts: []llm.Part{
						{Kind: llm.PartText, Text: "Checking both."},
						{Kind: llm.PartCall, Call: callWeather},
						{Kind: llm.PartCall, Call: callAdd},
					}},
					llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
					llm.ToolResult(llm.Result{CallID: "toolu_2", Name: "add", Content: "tool failed: overflow", Status: llm.ResultError}),
					llm.UserText("And tomorrow?"),
				},
				Tools:         weatherTools,
				ParallelCalls: true,
			},
		},
		{
			name: "reasoning from other providers is dropped",
			req: llm.Request{
				Items: []llm.Item{
					llm.UserText("hi"),
					{Role: llm.RoleAssistant, Parts: []llm.Part{
						{Kind: llm.PartReasoning, Text: "openai thoughts", Opaque: &llm.Opaque{Provider: "openai-responses", ID: "rs_1", Encrypted: "gAAAA"}},
						{Kind: llm.PartReasoning, Text: "deepseek thoughts"},
						{Kind: llm.PartReasoning, Text: "unsigned", Opaque: &llm.Opaque{Provider: "anthropic"}},
						{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Encrypted: "redacted-data"}},
						{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}`)}},
						{Kind: llm.PartText, Text: "  \n"},
						{Kind: llm.PartText, Text: "Hello."},
					}},
					llm.UserText("again"),
				},
			},
		},
		{
			name: "tool choice none keeps the definitions",
			req: llm.Request{
				Items:      []llm.Item{llm.UserText("Answer now.")},
				Tools:      weatherTools,
				ToolChoice: llm.ToolChoiceNone,
			},
		},
		{
			name: "tool choice required and no parallel calls",
			req: llm.Request{
				Items:           []llm.Item{llm.UserText("Use a tool.")},
				Tools:           weatherTools[:1],
				ToolChoice:      llm.ToolChoiceRequired,
				MaxOutputTokens: 1000,
				Temperature:     &temp,
			},
		},
		{
			name: "history calls without tools declare them",
			req: llm.Request{
				Items: []llm.Item{
					llm.UserText("Weather?"),
					{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartCall, Call: &llm.Call{ID: "toolu_9", Name: "weather", Args: `{"location": "Flor`}}}},
					llm.ToolResult(llm.Result{CallID: "toolu_9", Name: "weather", Content: "invalid JSON arguments", Status: llm.ResultError}),
				},
			},
		},
		{
			name: "thinking budget raises a smaller cap",
			opts: Options{ThinkingBudget: 4000},
			req: llm.Request{
				Items:           []llm.Item{llm.UserText("Think.")},
				MaxOutputTokens: 2000,
				Temperature:     &temp,
			},
		},
		{
			name: "prompt cache marks system and the last two messages",
			opts: Options{PromptCache: true},
			req: llm.Request{
				System: "sys",
				Items: []llm.Item{
					llm.UserText("Weather?"),
					{Role: llm.RoleAssistant, Parts: []llm.Part{
						{Kind: llm.PartReasoning, Text: "t", Opaque: &llm.Opaque{Provider: "anthropic", Signature: "s"}},
						{Kind: llm.PartCall, Call: callWeather},
					}},
					llm.ToolResult(llm.Result{CallID: "toolu_1", Name: "weather", Content: "40 C", Status: llm.ResultOK}),
				},
				Tools: weatherTools[:1],
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The body as it reaches the server, through the SDK.
			m, srv := newMock(t, false, tc.opts, testkit.AnthropicRound{Round: testkit.Round{Text: "ok"}})
			req := tc.req
			req.Model = "claude-sonnet-4-5"
			if _, _, err := run(t, m, &req); err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(srv.Requests()[0].Body, &obj); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			enc.Encode(obj)
			golden := filepath.Join("testdata", "request", sanitize(tc.name)+".json")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("request differs from %s:\n%s", golden, out.Bytes())
			}
		})
	}
}

func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == ' ' {
			b[i] = '_'
		}
	}
	return string(b)
}

func TestDefaultMaxTokensPerModel(t *testing.T) {
	cases := map[string]int{
		"claude-3-haiku-20240307":    4096,
		"claude-3-opus-20240229":     4096,
		"claude-3-5-sonnet-20241022": 8192,
		"claude-3-7-sonnet-20250219": 16384,
		"claude-sonnet-4-20250514":   16384,
		"claude-opus-4-6":            16384,
		"some-proxy-model":           16384,
	}
	for model, want := range cases {
		if got := defaultMaxTokens(model); got != want {
			t.Errorf("defaultMaxTokens(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"base URL with /v1", Options{BaseURL: "https://api.anthropic.com/v1/"}},
		{"thinking budget below the minimum", Options{ThinkingBudget: 500}},
		{"negative max tokens", Options{MaxTokens: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil {
				t.Error("New accepted the options")
			}
		})
	}
}
