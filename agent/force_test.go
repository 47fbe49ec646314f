package agent

import (
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// TestForceToolMountsButKeepsTheSafetyGates: a forced tool is mounted
// whatever its switch says, but forcing exec is only asking for it (the
// machine's isolation and the approval policy still decide), and the
// sandbox mode and Disable still win.
func TestForceToolMountsButKeepsTheSafetyGates(t *testing.T) {
	ws, err := sandbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	none := func() sandbox.Report { return sandbox.Report{Isolation: sandbox.IsolationNone, Reason: "no bwrap"} }
	for _, tt := range []struct {
		name     string
		tools    Tools
		mode     sandbox.Mode
		approval tool.Policy
		in, out  []string
	}{
		{"outside the capability, not forced", Tools{Capability: "none"}, "", tool.PolicyOnRequest, nil, []string{"read_file"}},
		{"a tool outside the capability", Tools{Capability: "none", Force: []string{"read_file"}}, "", tool.PolicyOnRequest, []string{"read_file"}, []string{"write_file"}},
		{"exec where it may run (approval asked)", Tools{Force: []string{"exec"}}, "", tool.PolicyOnRequest, []string{"exec"}, nil},
		{"exec without a sandbox or approval", Tools{Force: []string{"exec", "code_execution"}}, "", tool.PolicyNever, nil, []string{"exec", "code_execution"}},
		{"a writer in read-only mode", Tools{Force: []string{"write_file"}}, sandbox.ModeReadOnly, tool.PolicyOnRequest, nil, []string{"write_file"}},
		{"disabled too", Tools{Capability: "none", Force: []string{"read_file"}, Disable: []string{"read_file"}}, "", tool.PolicyOnRequest, nil, []string{"read_file"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compose(t.Context(), ws, Composition{Tools: tt.tools, Sandbox: tt.mode, Approval: tt.approval, Detect: none})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.in {
				if _, ok := c.Set.Get(n); !ok {
					t.Errorf("%s is not mounted (set %v)", n, c.Set.Names())
				}
			}
			for _, n := range tt.out {
				if _, ok := c.Set.Get(n); ok {
					t.Errorf("%s is mounted (set %v)", n, c.Set.Names())
				}
			}
		})
	}
}
