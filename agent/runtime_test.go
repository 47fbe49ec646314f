package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/askuser"
	"github.com/reinhq/rein/tools/mcp"
)

// scriptedRuntime is a runtime whose threads run a one-round script in
// dir, over a store in dir.
func scriptedRuntime(t *testing.T, dir string) *Runtime {
	t.Helper()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("rounds:\n  - text: hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return NewRuntime(RuntimeConfig{Store: st, Defaults: record.Settings{Model: "scripted:" + script, Approval: "on-request", Workspace: dir}})
}

// TestRuntimeComposesToolsOnce: the runtime composes a thread's tools and
// prompt on its first run and reuses them for the next ones; threads of one
// workspace with the same tool choices share the set, since nothing changes
// it, and the workspace is opened once for all of them. (Moved from
// internal/cli's TestServeComposesToolsOnce with the setup it tests.)
func TestRuntimeComposesToolsOnce(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	r := scriptedRuntime(t, dir)
	setup := func(id string, c record.Settings) loop.Options {
		t.Helper()
		o, release, err := r.Setup(t.Context(), record.Thread{ID: id, Settings: c})
		if err != nil {
			t.Fatal(err)
		}
		if release != nil {
			release()
		}
		return o
	}
	first := setup("thread_a", record.Settings{Instructions: "be brief"})
	again := setup("thread_a", record.Settings{Instructions: "be brief"})
	same := setup("thread_b", record.Settings{Instructions: "be thorough"})
	fewer := setup("thread_c", record.Settings{DisableTools: []string{"web_fetch", "write_file"}})
	tests := []struct {
		name string
		ok   bool
	}{
		{"a thread's runs share its tool set", first.Tools == again.Tools},
		{"a thread's runs share its system prompt", first.System == again.System},
		{"threads with the same tools share the set", first.Tools == same.Tools},
		{"each thread keeps its instructions", strings.HasPrefix(first.System, "be brief") && strings.HasPrefix(same.System, "be thorough")},
		{"threads with other tools have their own set", fewer.Tools != first.Tools && fewer.Tools.Len() < first.Tools.Len()},
		{"the threads of a workspace share its handle", len(r.workspaces) == 1},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("not so: %s", tt.name)
		}
	}
	r.Close()
	if len(r.workspaces) != 0 {
		t.Errorf("%d workspaces still open after close", len(r.workspaces))
	}
	if _, _, err := r.Setup(t.Context(), record.Thread{ID: "thread_d", Settings: record.Settings{Workspace: t.TempDir()}}); err == nil {
		t.Error("a run set up after close, want an error")
	}
}

func TestRuntimeGivesAGrowingSetToOneThread(t *testing.T) {
	tests := []struct {
		name  string
		tools []tool.Tool
		want  bool
	}{
		{"a set with load_tools grows", []tool.Tool{mcp.LoadTools(nil, tool.NewSet())}, true},
		{"a set without it does not", []tool.Tool{askuser.New()}, false},
	}
	for _, tt := range tests {
		if got := grows(tool.NewSet(tt.tools...)); got != tt.want {
			t.Errorf("%s: grows = %v", tt.name, got)
		}
	}
}

// TestRuntimeCheckNamesNoFlag: a thread looser than the runtime allows is
// refused with a *SandboxError the door renders in its own words; the
// library's message names no command-line flag.
func TestRuntimeCheckNamesNoFlag(t *testing.T) {
	r := NewRuntime(RuntimeConfig{Defaults: record.Settings{Model: "scripted:x.yaml", Workspace: t.TempDir()}, MaxSandbox: "read-only"})
	err := r.Check(record.Settings{Sandbox: "full-access"})
	se, ok := err.(*SandboxError)
	if !ok || se.Asked != "full-access" || se.Allowed != "read-only" {
		t.Fatalf("err %v, want a *SandboxError", err)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the library's error %q names a flag", err)
	}
}
