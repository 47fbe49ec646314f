package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/mcp"
)

// startMCP starts the MCP servers of the config file f, or returns nil
// when it names none (or f is nil). A server that cannot start is left out
// with a warning on logw (mcp.Start); only a wrong config is an error.
func startMCP(ctx context.Context, logw io.Writer, f *config.File) (*mcp.Manager, error) {
	if f == nil || len(f.MCP.Servers) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(f.MCP.Servers))
	for n := range f.MCP.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	cfgs := make([]mcp.ServerConfig, 0, len(names))
	for _, n := range names {
		c := mcp.ServerConfig(f.MCP.Servers[n])
		c.Name = n
		cfgs = append(cfgs, c)
	}
	m, err := mcp.Start(ctx, cfgs, mcp.Options{Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, fmt.Errorf("MCP servers in %s: %w", f.Path, err)
	}
	return m, nil
}

// deferredLoader is load_tools for the registry, before the turn's live
// set exists: composition decides whether it is mounted, and bind gives it
// the set it loads into.
type deferredLoader struct {
	m    mcp.Catalog
	spec tool.Spec

	mu   sync.Mutex
	live tool.Tool
}

func newDeferredLoader(m mcp.Catalog) *deferredLoader {
	return &deferredLoader{m: m, spec: mcp.LoadTools(m, tool.NewSet()).Spec()}
}

// bind makes load_tools add to set, the turn's live tools.
func (d *deferredLoader) bind(set *tool.Set) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live = mcp.LoadTools(d.m, set)
}

func (d *deferredLoader) Spec() tool.Spec { return d.spec }

func (d *deferredLoader) Keys(json.RawMessage) tool.Keys {
	// It changes the live set: one at a time.
	return tool.Keys{Writes: []string{"tools"}}
}

func (d *deferredLoader) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	d.mu.Lock()
	live := d.live
	d.mu.Unlock()
	if live == nil {
		return tool.Output{Text: "load_tools is not ready: the turn's tool set was not composed", Failed: true}, nil
	}
	return live.Run(ctx, c)
}

// manifestBlock is the system prompt's list of the deferred tools the turn
// may load.
func manifestBlock(o *mcp.Offer) string {
	if o == nil {
		return ""
	}
	man := o.Manifest()
	if man == "" {
		return ""
	}
	return "## extended tools\nThese tools are available but not loaded; call load_tools with their names to use them (from your next step on).\n" + man
}
