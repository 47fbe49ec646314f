package agent

import (
	"fmt"
	"path/filepath"

	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
)

// A thread keeps its settings (DESIGN §9): the workspace, model, approval
// policy and sandbox mode it was started with are its own, so a turn on it
// runs with them from any directory and through any door.

// ConflictError is a setting a door asked for that contradicts the one
// its thread keeps.
type ConflictError struct {
	Thread string
	// Setting is "workspace", "model", "approval" or "sandbox".
	Setting string
	// Given is what was asked for, as given; Kept the thread's.
	Given, Kept string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("thread %s keeps %s %s, not %s; continue it with its own, or start a new thread", e.Thread, e.Setting, e.Kept, e.Given)
}

// Continue returns the settings of a turn on thread th when a door asks
// for asked (its non-empty Workspace, Model, Approval and Sandbox: what
// the user gave): the thread's own where asked names none. A workspace,
// approval policy or sandbox mode that contradicts the thread's is refused
// with a *ConflictError. Another model is refused too unless modelPerTurn,
// when it runs the one turn — safe and explicit, since the history is the
// thread's whatever answers it — and otherModel reports it, for the door
// to say so.
func Continue(th record.Thread, asked record.Settings, modelPerTurn bool) (s record.Settings, otherModel bool, err error) {
	s = asked
	kept := th.Settings
	conflict := func(setting, given, keeps string) error {
		return &ConflictError{Thread: th.ID, Setting: setting, Given: given, Kept: keeps}
	}
	if kept.Workspace != "" {
		if asked.Workspace == "" {
			s.Workspace = kept.Workspace
		} else if abs, err := filepath.Abs(asked.Workspace); err != nil || filepath.Clean(abs) != filepath.Clean(kept.Workspace) {
			return s, false, conflict("workspace", asked.Workspace, kept.Workspace)
		}
	}
	if kept.Model != "" {
		if asked.Model == "" {
			s.Model = kept.Model
		} else if spec, err := provider.ParseSpec(asked.Model); err == nil && spec.String() != kept.Model {
			if !modelPerTurn {
				return s, false, conflict("model", asked.Model, kept.Model)
			}
			otherModel = true
		}
	}
	if a := kept.Approval; a != "" {
		if asked.Approval == "" {
			s.Approval = a
		} else if asked.Approval != a {
			return s, false, conflict("approval", asked.Approval, a)
		}
	}
	if m := kept.Sandbox; m != "" {
		if asked.Sandbox == "" {
			s.Sandbox = m
		} else if given, err := sandbox.ParseMode(asked.Sandbox); err != nil || string(given) != m {
			return s, false, conflict("sandbox", asked.Sandbox, m)
		}
	}
	return s, otherModel, nil
}
