package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/reinhq/rein/config"
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
