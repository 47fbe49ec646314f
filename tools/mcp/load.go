package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/tool"
)

// LoadToolsName is the name of the load_tools tool.
const LoadToolsName = "load_tools"

// Catalog is a source of deferred tools: tools listed in the prompt by
// name and loaded into a turn on request. A Manager is one.
type Catalog interface {
	Lookup(name string) (tool.Tool, bool)
	Names() []string
}

// withholder is a Catalog that withholds some tools from the turn (an
// Offer in the read-only sandbox mode) and says why.
type withholder interface {
	WithheldReason(name string) (string, bool)
}

type loadInput struct {
	Names []string `json:"names" jsonschema:"the names of the tools to load, as the list of deferred tools gives them"`
}

// LoadTools returns the load_tools tool of one turn: it adds the named
// tools of cat to live, the turn's tool set, which the engine offers from
// the next round. It answers which tools were loaded, which were already
// there, and which are unknown.
func LoadTools(cat Catalog, live *tool.Set) tool.Tool {
	return tool.New(LoadToolsName,
		"Load deferred tools by name so you can call them from your next step; "+
			"the list of deferred tools is in the instructions. Load only what the task needs.",
		func(_ context.Context, in loadInput) (tool.Output, error) {
			return load(cat, live, in.Names), nil
		},
		// It writes the live set: two calls in one round run in order.
		tool.WithAccess(tool.Mutating))
}

func load(cat Catalog, live *tool.Set, names []string) tool.Output {
	if len(names) == 0 {
		return failed(`load_tools needs "names": one or more tool names from the list of deferred tools`)
	}
	var loaded, already, unknown, withheld []string
	wh, _ := cat.(withholder)
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if seen[n] {
			continue
		}
		seen[n] = true
		t, ok := cat.Lookup(n)
		switch {
		case !ok && wh != nil:
			if why, held := wh.WithheldReason(n); held {
				withheld = append(withheld, fmt.Sprintf("%s (%s)", n, why))
				break
			}
			unknown = append(unknown, n)
		case !ok:
			unknown = append(unknown, n)
		case live.Add(t):
			loaded = append(loaded, n)
		default:
			already = append(already, n)
		}
	}
	var b strings.Builder
	if len(loaded) > 0 {
		fmt.Fprintf(&b, "loaded: %s; call them from your next step.\n", strings.Join(loaded, ", "))
	}
	if len(already) > 0 {
		fmt.Fprintf(&b, "already loaded: %s.\n", strings.Join(already, ", "))
	}
	if len(withheld) > 0 {
		fmt.Fprintf(&b, "not available in this turn: %s.\n", strings.Join(withheld, "; "))
	}
	if len(unknown) > 0 {
		avail := strings.Join(cat.Names(), ", ")
		if avail == "" {
			avail = "none"
		}
		fmt.Fprintf(&b, "unknown: %s; deferred tools: %s.\n", strings.Join(unknown, ", "), avail)
	}
	return tool.Output{
		Text:   strings.TrimSuffix(b.String(), "\n"),
		Failed: len(loaded) == 0 && len(already) == 0,
	}
}
