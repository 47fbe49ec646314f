package agent

import (
	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/tool"
)

// addTask registers the task tool (sub-agents, DESIGN §7.3) and offers it
// in every turn that is not exclusive to a capability; --no-tool task
// removes it. Its children get the turn's composed tools, never more, so
// the one composition decides what a sub-agent may do too.
func addTask(reg *tool.Set, offered *map[string]string) *task.Tool {
	t := task.New(task.Options{})
	reg.Add(t)
	if *offered == nil {
		*offered = make(map[string]string)
	}
	(*offered)[task.Name] = "sub-agents: a child turn with the turn's own tools"
	return t
}
