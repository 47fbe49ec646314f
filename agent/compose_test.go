package agent

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// TestComposeExecAndCapability: exec is mounted where the sandbox mode can
// run it on this machine (a fake one, with and without bubblewrap), the
// read-only mode withholds the file tools that write, and a capability
// that names nothing is refused.
func TestComposeExecAndCapability(t *testing.T) {
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	bwrap := func() sandbox.Report { return sandbox.Report{Isolation: sandbox.IsolationBwrap} }
	none := func() sandbox.Report { return sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "no bwrap"} }
	for _, tt := range []struct {
		name     string
		mode     sandbox.Mode
		approval tool.Policy
		detect   func() sandbox.Report
		exec     bool
		write    bool
	}{
		{"workspace-write in bubblewrap", sandbox.ModeWorkspaceWrite, tool.PolicyOnRequest, bwrap, true, true},
		{"workspace-write without, asking", "", tool.PolicyOnRequest, none, true, true},
		{"workspace-write without, never asking", sandbox.ModeWorkspaceWrite, tool.PolicyNever, none, false, true},
		{"read-only without bubblewrap", sandbox.ModeReadOnly, tool.PolicyOnRequest, none, false, false},
		{"read-only in bubblewrap", sandbox.ModeReadOnly, tool.PolicyOnRequest, bwrap, true, false},
		{"full-access", sandbox.ModeFullAccess, tool.PolicyNever, none, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compose(t.Context(), ws, Composition{Tools: Tools{}, Sandbox: tt.mode, Approval: tt.approval, Detect: tt.detect})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.Set.Get("exec"); ok != tt.exec {
				t.Errorf("exec mounted %v, want %v", ok, tt.exec)
			}
			if _, ok := c.Set.Get("write_file"); ok != tt.write {
				t.Errorf("write_file mounted %v, want %v", ok, tt.write)
			}
			if c.Capability == nil || c.Capability.Name != DefaultCapability || c.Knowledge == nil {
				t.Errorf("capability %+v, knowledge %v; want the workspace's and the knowledge", c.Capability, c.Knowledge)
			}
		})
	}
	for _, bad := range []Tools{{Capability: "x="}, {Capability: "none", Exclusive: true}, {Capability: "=read_file"}} {
		if _, err := Compose(t.Context(), ws, Composition{Tools: bad}); err == nil || !strings.Contains(err.Error(), "capability") {
			t.Errorf("%+v: err %v, want a capability error", bad, err)
		}
	}
	if _, err := Compose(t.Context(), ws, Composition{Sandbox: "wide-open"}); err == nil {
		t.Error("an unknown sandbox mode: no error")
	}
}

// TestComposeOffersTaskUnlessRemoved: every composed turn has the task
// tool (sub-agents), bound to the composed set so a read-only child is
// told apart; --no-tool task (Disable) removes it, and an exclusive
// capability does not get it.
func TestComposeOffersTaskUnlessRemoved(t *testing.T) {
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, tt := range []struct {
		name  string
		tools Tools
		want  bool
	}{
		{"by default", Tools{}, true},
		{"--no-tool task", Tools{Disable: []string{"task"}}, false},
		{"an exclusive capability", Tools{Capability: "reader=read_file", Exclusive: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compose(t.Context(), ws, Composition{Tools: tt.tools})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := c.Set.Get("task")
			if ok != tt.want {
				t.Fatalf("task mounted %v, want %v (tools %v)", ok, tt.want, c.Set.Names())
			}
			if !ok {
				return
			}
			k, ok := got.(tool.Keyer)
			if !ok {
				t.Fatal("task declares no keys")
			}
			if k.Keys([]byte(`{"description":"d","prompt":"p","tools":["read_file","grep"]}`)).Exclusive {
				t.Error("a child with read_file and grep runs alone: the tool is not bound to the composed set")
			}
		})
	}
}
