package agent

import (
	"context"
	"slices"

	"github.com/reinhq/rein/record"
)

// kbsOf are the knowledge bases a thread's turns attach: the runtime's own
// (every thread's, such as rein serve --kb), then the thread's, each once.
func (r *Runtime) kbsOf(c record.Settings) []string {
	if len(c.KBs) == 0 {
		return r.c.Tools.KBs
	}
	out := slices.Clone(r.c.Tools.KBs)
	for _, name := range c.KBs {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// KnowledgeBases lists the names of the knowledge bases in the runtime's
// store, the ones a thread may attach (record.Settings.KBs); none without
// a store or without a workspace (nothing is composed then).
func (r *Runtime) KnowledgeBases(ctx context.Context) ([]string, error) {
	if r.c.Store == nil || r.c.NoWorkspace {
		return nil, nil
	}
	kbs, err := r.c.Store.KBs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(kbs))
	for i, k := range kbs {
		out[i] = k.Name
	}
	return out, nil
}
