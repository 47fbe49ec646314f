package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/cli"
	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider"
)

// isolateEnv clears every provider variable and points the config lookup at
// an empty directory, so a developer's own keys and config never leak into a
// test.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL",
	} {
		t.Setenv(k, "")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

// chatWorkspace is a workspace with two files the model reads in parallel.
func chatWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// parallelReads is a turn of two rounds: two read_file calls in one
// response, then the answer.
func parallelReads() []testkit.Round {
	return []testkit.Round{
		{Text: "Reading both files.", Calls: []testkit.MockCall{
			{ID: "call_a", Name: "read_file", Args: `{"path":"a.txt"}`},
			{ID: "call_b", Name: "read_file", Args: `{"path":"b.txt"}`},
		}},
		{Text: "a.txt says alpha and b.txt says beta."},
	}
}

// checkParallelRound checks that the second request carried both results,
// paired with their calls, with the files' contents.
func checkParallelRound(t *testing.T, srv *testkit.MockServer) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Path != "/v1/chat/completions" {
			t.Errorf("request %d path %q", i+1, r.Path)
		}
		if r.Invariant != nil {
			t.Errorf("request %d: %v", i+1, r.Invariant)
		}
	}
	results := map[string]string{}
	for _, it := range reqs[1].Items {
		if r := it.Result(); it.Role == llm.RoleTool && r != nil {
			results[r.CallID] = r.Content
		}
	}
	if !strings.Contains(results["call_a"], "alpha") || !strings.Contains(results["call_b"], "beta") {
		t.Errorf("round 2 results %q, want call_a with alpha and call_b with beta", results)
	}
}

func TestRunOpenAIChatEndToEnd(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := "stream"
		if !stream {
			name = "json-body"
		}
		t.Run(name, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv("OPENAI_API_KEY", "x")
			srv := testkit.NewChatServer(t, parallelReads()...)
			args := []string{"run", "--model", "openai-chat:m", "--base-url", srv.BaseURL(), "--workspace", chatWorkspace(t), "--json"}
			if !stream {
				args = append(args, "--no-stream")
			}
			args = append(args, "What do a.txt and b.txt say?")
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, &stdout, &stderr)
			if code != cli.ExitCompleted {
				t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
			}

			lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
			types := map[string]int{}
			var last map[string]any
			for i, l := range lines {
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("line %d is not JSON: %q", i+1, l)
				}
				typ, _ := v["type"].(string)
				if typ == "" {
					t.Errorf("line %d has no type: %s", i+1, l)
				}
				types[typ]++
				last = v
			}
			if last["type"] != "outcome" {
				t.Fatalf("the last line is %v, want the outcome", last["type"])
			}
			if types["outcome"] != 1 {
				t.Errorf("%d outcome lines, want 1", types["outcome"])
			}
			want := map[string]any{
				"status": "completed", "stop_reason": "finished",
				"answer": "a.txt says alpha and b.txt says beta.",
				"rounds": 2.0, "tool_steps": 1.0,
			}
			for k, w := range want {
				if last[k] != w {
					t.Errorf("outcome %s = %v, want %v", k, last[k], w)
				}
			}
			if types["result"] != 2 || types["call_completed"] != 2 {
				t.Errorf("events %v: want 2 call_completed and 2 result", types)
			}
			if stream && types["text_delta"] == 0 {
				t.Errorf("no text_delta events while streaming: %v", types)
			}
			checkParallelRound(t, srv)
		})
	}
}

func TestRunOpenAIChatHumanOutput(t *testing.T) {
	isolateEnv(t)
	t.Setenv("OPENAI_API_KEY", "x")
	srv := testkit.NewChatServer(t, parallelReads()...)
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{
		"run", "--model", "openai-chat:m", "--base-url", srv.BaseURL(), "--workspace", chatWorkspace(t),
		"What do a.txt and b.txt say?",
	}, &stdout, &stderr)
	if code != cli.ExitCompleted {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "a.txt says alpha and b.txt says beta.") {
		t.Errorf("stdout lacks the answer:\n%s", stdout.String())
	}
	checkParallelRound(t, srv)
}

func TestRunWithoutAnyKeyPointsAtDemo(t *testing.T) {
	isolateEnv(t)
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", "hello"}, &stdout, &stderr)
	if code != cli.ExitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitUsage, stderr.String())
	}
	for _, w := range []string{"OPENAI_API_KEY", "--model", "rein demo"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
}

// writeConfigFile writes the config file where isolateEnv's
// XDG_CONFIG_HOME points.
func writeConfigFile(t *testing.T, text string) {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunConfiguredProvider(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model []string // the --model flag, if any
		extra string   // more config
	}{
		{"named on the command line", []string{"--model", "local:m"}, ""},
		{"the config file's default", nil, "model = \"local:m\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			srv := testkit.NewChatServer(t, parallelReads()...)
			writeConfigFile(t, tc.extra+"[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \""+srv.BaseURL()+"\"\n")
			args := append([]string{"run", "--json", "--workspace", chatWorkspace(t)}, tc.model...)
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), append(args, "What do a.txt and b.txt say?"), &stdout, &stderr)
			if code != cli.ExitCompleted {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), `"answer":"a.txt says alpha and b.txt says beta."`) {
				t.Errorf("no answer in the output:\n%s", stdout.String())
			}
			checkParallelRound(t, srv)
		})
	}
}

func TestRunConfigErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         []string
	}{
		{"no key with a config file", "[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
			[]string{"run", "hello"}, []string{"rein demo", "OPENAI_API_KEY"}},
		{"broken config file", "[providers.local]\nprotocol = \"openai-chat\"\nbase_ur = \"x\"\n",
			[]string{"run", "hello"}, []string{"config.toml", "base_ur"}},
		{"unknown provider", "", []string{"run", "--model", "nope:m", "hello"}, []string{`unknown provider "nope"`}},
		{"a configured key that is not set", "[providers.r]\nprotocol = \"openai\"\nkey_env = \"R_KEY\"\n",
			[]string{"run", "--model", "r:m", "hello"}, []string{"R_KEY is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			if tc.config != "" {
				writeConfigFile(t, tc.config)
			}
			var stdout, stderr bytes.Buffer
			if code := cli.Main(context.Background(), tc.args, &stdout, &stderr); code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitUsage, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestModelsCommand(t *testing.T) {
	isolateEnv(t)
	t.Setenv("OPENAI_API_KEY", "x")
	writeConfigFile(t, `
[providers.local]
protocol = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
tool_mode = "text"

[providers.local.models.qwen3]
context_window = 32768
max_output = 8192
estimated = ["max_output"]
price = { input_per_m = 0.5, output_per_m = 1.5 }
`)
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"models"}, &stdout, &stderr); code != cli.ExitCompleted {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, w := range []string{
		"config.toml (read)",
		"openai — built-in, Responses API, OPENAI_API_KEY set",
		"anthropic — built-in, Anthropic Messages, ANTHROPIC_API_KEY not set",
		"local — config, Chat Completions, http://127.0.0.1:8080/v1, no key, tools text",
		"gpt-5-mini", "claude-sonnet-4-5", "deepseek-reasoner",
		"~8,192", "32,768", "~ estimated",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("models output lacks %q:\n%s", w, out)
		}
	}
	if !regexp.MustCompile(`qwen3\s+32,768\s+~8,192\s+text\s+~yes\s+~tool-turn\s+0\.5\s+1\.5\s+0\.5`).MatchString(out) {
		t.Errorf("the qwen3 row is wrong:\n%s", out)
	}

	stdout.Reset()
	if code := cli.Main(context.Background(), []string{"models", "--json"}, &stdout, &stderr); code != cli.ExitCompleted {
		t.Fatalf("--json: exit %d: %s", code, stderr.String())
	}
	var v struct {
		Providers []provider.Info `json:"providers"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("--json output: %v", err)
	}
	if n := len(v.Providers); n != 5 || v.Providers[4].Name != "local" || v.Providers[4].Models[0].Caps.ContextWindow != 32768 {
		t.Errorf("--json providers: %+v", v.Providers)
	}
}

func TestRunConfiguredTextToolMode(t *testing.T) {
	isolateEnv(t)
	srv := testkit.NewChatServer(t,
		testkit.Round{Text: "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a.txt</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"},
		testkit.Round{Text: "a.txt says alpha."},
	)
	writeConfigFile(t, "[providers.local]\nprotocol = \"openai-chat\"\nbase_url = \""+srv.BaseURL()+"\"\ntool_mode = \"text\"\n")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", "--json", "--model", "local:m", "--workspace", chatWorkspace(t), "What does a.txt say?"}, &stdout, &stderr)
	if code != cli.ExitCompleted || !strings.Contains(stdout.String(), `"answer":"a.txt says alpha."`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if bytes.Contains(r.Body, []byte(`"tools"`)) || bytes.Contains(r.Body, []byte(`"role":"tool"`)) {
			t.Errorf("request %d has native tools or results in text mode: %s", i+1, r.Body)
		}
	}
	if !bytes.Contains(reqs[1].Body, []byte(`<tool_result name=\"read_file\">\n`)) || !bytes.Contains(reqs[1].Body, []byte(`alpha\n</tool_result>`)) {
		t.Errorf("the result did not go back as text: %s", reqs[1].Body)
	}
}
