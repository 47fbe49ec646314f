package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/record"
)

// TestContinueKeepsTheThreadsSettings: a turn on a thread runs with the
// thread's workspace, model, approval and sandbox where the door asks for
// none; one that contradicts them is refused with a *ConflictError naming
// the setting (no flag: the door says it in its words); another model runs
// one turn only where the door allows it.
func TestContinueKeepsTheThreadsSettings(t *testing.T) {
	ws := t.TempDir()
	th := record.Thread{ID: "thread_k", Settings: record.Settings{Workspace: ws, Model: "openai:gpt-5", Approval: "untrusted", Sandbox: "read-only"}}
	for _, tt := range []struct {
		name         string
		asked        record.Settings
		perTurn      bool
		want         record.Settings
		otherModel   bool
		conflictWith string
	}{
		{name: "nothing asked", want: th.Settings},
		{name: "the same, spelled out", asked: record.Settings{Workspace: ws + "/.", Approval: "untrusted", Sandbox: "read-only", Model: "openai:gpt-5"}, want: record.Settings{Workspace: ws + "/.", Model: "openai:gpt-5", Approval: "untrusted", Sandbox: "read-only"}},
		{name: "another workspace", asked: record.Settings{Workspace: t.TempDir()}, conflictWith: "workspace"},
		{name: "another approval", asked: record.Settings{Approval: "never"}, conflictWith: "approval"},
		{name: "another sandbox", asked: record.Settings{Sandbox: "full-access"}, conflictWith: "sandbox"},
		{name: "another model, not per turn", asked: record.Settings{Model: "anthropic:claude"}, conflictWith: "model"},
		{name: "another model for one turn", asked: record.Settings{Model: "anthropic:claude"}, perTurn: true, otherModel: true,
			want: record.Settings{Workspace: ws, Model: "anthropic:claude", Approval: "untrusted", Sandbox: "read-only"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, other, err := Continue(th, tt.asked, tt.perTurn)
			if tt.conflictWith != "" {
				var ce *ConflictError
				if !errors.As(err, &ce) || ce.Setting != tt.conflictWith || ce.Thread != th.ID {
					t.Fatalf("err %v, want a conflict on %s", err, tt.conflictWith)
				}
				if strings.Contains(err.Error(), "--") {
					t.Errorf("the library's error %q names a flag", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Workspace != tt.want.Workspace || got.Model != tt.want.Model || got.Approval != tt.want.Approval || got.Sandbox != tt.want.Sandbox || other != tt.otherModel {
				t.Errorf("got %+v other model %v, want %+v %v", got, other, tt.want, tt.otherModel)
			}
		})
	}
}
