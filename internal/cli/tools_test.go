package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/store"
)

type toolsReport struct {
	Mounted    []string `json:"mounted"`
	Sandbox    string   `json:"sandbox"`
	Capability string   `json:"capability"`
	Exclusive  bool     `json:"exclusive"`
	Flags      []struct {
		Flag string `json:"flag"`
		On   bool   `json:"on"`
	} `json:"flags"`
	Tools []struct {
		Name   string `json:"name"`
		In     bool   `json:"in"`
		Reason string `json:"reason"`
	} `json:"tools"`
	Deferred []deferredTool `json:"deferred"`
}

func (r toolsReport) decision(name string) (in bool, reason string, ok bool) {
	for _, d := range r.Tools {
		if d.Name == name {
			return d.In, d.Reason, true
		}
	}
	return false, "", false
}

func toolsJSON(t *testing.T, args ...string) toolsReport {
	t.Helper()
	t.Setenv("GITHUB_API_URL", "")
	args = append([]string{"tools", "--json", "--workspace", t.TempDir()}, args...)
	code, stdout, stderr := runMain(t, context.Background(), args...)
	if code != ExitCompleted {
		t.Fatalf("%v: exit %d, stderr %s", args, code, stderr)
	}
	var r toolsReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: not JSON: %v\n%s", args, err, stdout)
	}
	if !slices.Equal(r.Mounted, names(r)) {
		t.Errorf("mounted %v, but the tools marked in are %v", r.Mounted, names(r))
	}
	return r
}

func names(r toolsReport) []string {
	out := []string{}
	for _, d := range r.Tools {
		if d.In {
			out = append(out, d.Name)
		}
	}
	return out
}

var fileTools = []string{"list_dir", "read_file", "glob", "grep", "write_file", "edit_file"}

func TestToolsComposesTheTurnFromTheFlags(t *testing.T) {
	// has_kb comes from the store: a base that is there turns it on, one
	// that is not fails it closed.
	kbDB := filepath.Join(t.TempDir(), "rein.db")
	st, err := store.Open(context.Background(), kbDB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutKBDocs(context.Background(), "notes", nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	type want struct {
		name   string
		in     bool
		reason string
	}
	for _, tc := range []struct {
		name  string
		args  []string
		first []string // the mounted list starts with these, in order
		want  []want
	}{
		{
			// exec is offered by default where it can be (sandbox_test.go).
			name:  "without exec: the workspace capability and the always-on tools",
			args:  []string{"--exec=false"},
			first: fileTools,
			want: []want{
				{"read_file", true, `owned by the capability "workspace"`},
				{"ask_user", true, "always on"},
				{"web_fetch", true, "always on"},
				{"github", true, "always on"},
				{"exec", false, "has_exec is off"},
				{"rag", false, "has_kb is off"},
			},
		},
		{
			name: "--exec and --kb turn their flags on",
			args: []string{"--exec", "--kb", "notes", "--db", kbDB},
			want: []want{
				{"exec", true, "mounted: has_exec"},
				{"code_execution", true, "mounted: has_code"},
				{"rag", true, "mounted: has_kb"},
				{"kb_files", true, "mounted: has_kb"},
			},
		},
		{
			name: "--kb of a base the store lacks fails closed",
			args: []string{"--kb", "missing", "--db", kbDB},
			want: []want{
				{"rag", false, "has_kb could not be computed (knowledge base missing: store: not found)"},
			},
		},
		{
			name: "--no-tool removes what the capability owns",
			args: []string{"--no-tool", "write_file", "--no-tool", "edit_file"},
			want: []want{
				{"write_file", false, "suppressed"},
				{"edit_file", false, "suppressed"},
				{"read_file", true, ""},
			},
		},
		{
			name:  "--tool switches on a tool no step governs",
			args:  []string{"--capability", "none", "--tool", "read_file"},
			first: []string{"read_file"},
			want: []want{
				{"read_file", true, "switched on by the user"},
				{"grep", false, "optional, not switched on"},
			},
		},
		{
			name: "--tool cannot switch on a gated tool",
			args: []string{"--exec=false", "--tool", "exec"},
			want: []want{{"exec", false, "mounted only when has_exec holds"}},
		},
		{
			name:  "an exclusive capability",
			args:  []string{"--capability", "reader=read_file,grep", "--exclusive", "--exec"},
			first: []string{"read_file", "grep", "ask_user"},
			want: []want{
				{"list_dir", false, `the capability "reader" is exclusive`},
				{"exec", false, `the capability "reader" is exclusive`},
				{"web_fetch", false, `the capability "reader" is exclusive`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := toolsJSON(t, tc.args...)
			if len(r.Mounted) < len(tc.first) || !slices.Equal(r.Mounted[:len(tc.first)], tc.first) {
				t.Errorf("mounted %v, want it to start with %v", r.Mounted, tc.first)
			}
			for _, w := range tc.want {
				in, reason, ok := r.decision(w.name)
				if !ok || in != w.in || !strings.Contains(reason, w.reason) {
					t.Errorf("%s: in=%v reason %q (listed %v), want in=%v reason containing %q", w.name, in, reason, ok, w.in, w.reason)
				}
			}
		})
	}
}

func TestToolsExclusiveTurnMountsOnlyTheCapabilityAndAskUser(t *testing.T) {
	r := toolsJSON(t, "--capability", "reader=read_file", "--exclusive")
	if want := []string{"read_file", "ask_user"}; !slices.Equal(r.Mounted, want) {
		t.Errorf("mounted %v, want %v", r.Mounted, want)
	}
	if r.Capability != "reader" || !r.Exclusive {
		t.Errorf("capability %q exclusive %v", r.Capability, r.Exclusive)
	}
}

func TestToolsPrintsInThenOutWithReasons(t *testing.T) {
	code, stdout, stderr := runMain(t, context.Background(), "tools", "--workspace", t.TempDir(), "--kb", "notes", "--exec=false")
	if code != ExitCompleted {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	in := strings.Index(stdout, "in (in the order offered):")
	out := strings.Index(stdout, "\nout:")
	if in < 0 || out < in {
		t.Fatalf("no in and out sections:\n%s", stdout)
	}
	for _, s := range []string{"capability:  workspace", "flags on:    has_kb", "1. list_dir", "exec", "has_exec is off"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	if i := strings.Index(stdout, "has_exec is off"); i < out {
		t.Errorf("exec is not in the out section:\n%s", stdout)
	}
}

func TestToolsBadFlagsExitTwo(t *testing.T) {
	t.Setenv("GITHUB_API_URL", "")
	for _, args := range [][]string{
		{"tools", "--capability", "nonsense"},
		{"tools", "--capability", "x="},
		{"tools", "--capability", "none", "--exclusive"},
		{"tools", "--workspace", "/does/not/exist"},
		{"tools", "extra-arg"},
	} {
		if code, _, stderr := runMain(t, context.Background(), args...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d stderr %q, want 2 with a message", args, code, stderr)
		}
	}
}

func TestToolsBadGitHubAPIURLExitsTwo(t *testing.T) {
	t.Setenv("GITHUB_API_URL", "ftp://nowhere")
	code, _, stderr := runMain(t, context.Background(), "tools", "--workspace", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "GITHUB_API_URL") {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
}
