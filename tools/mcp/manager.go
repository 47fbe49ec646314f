package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/reinhq/rein/tool"
)

// Manager holds the connected MCP servers and their tools. It is safe for
// concurrent use; one Manager serves every turn of a process.
type Manager struct {
	servers  []*server
	tools    []*remoteTool // in server order, then each server's order
	byName   map[string]*remoteTool
	problems []error
}

// Options configures Start.
type Options struct {
	// Logger receives warnings about servers; nil means slog.Default().
	Logger *slog.Logger
}

// Start connects to every server at once, each within its start timeout,
// and lists their tools. A server that cannot be reached is left out with
// a warning and reported by Problems; the error is only for configs that
// are wrong (ErrConfig) or name a server twice. Close the Manager to stop
// the servers.
func Start(ctx context.Context, cfgs []ServerConfig, opts Options) (*Manager, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	seen := map[string]bool{}
	for i, c := range cfgs {
		if err := c.check(); err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("mcp: %w: two servers are named %q", ErrConfig, c.Name)
		}
		seen[c.Name] = true
		cfgs[i] = c.withDefaults()
	}

	servers := make([]*server, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Go(func() { servers[i], errs[i] = connect(ctx, c, log) })
	}
	wg.Wait()

	m := &Manager{byName: map[string]*remoteTool{}}
	for i, s := range servers {
		if errs[i] != nil {
			log.Warn("MCP server left out", "mcp_server", cfgs[i].Name, "err", errs[i])
			m.problems = append(m.problems, errs[i])
			continue
		}
		m.servers = append(m.servers, s)
		for _, t := range s.tools {
			if _, dup := m.byName[t.spec.Name]; dup {
				log.Warn("MCP tool left out: its name is taken", "tool", t.spec.Name)
				continue
			}
			m.byName[t.spec.Name] = t
			m.tools = append(m.tools, t)
		}
	}
	return m, nil
}

// Problems returns why servers were left out at start.
func (m *Manager) Problems() []error { return append([]error(nil), m.problems...) }

// Lookup returns the deferred tool named name ("server__tool").
func (m *Manager) Lookup(name string) (tool.Tool, bool) {
	t, ok := m.byName[name]
	if !ok {
		return nil, false
	}
	return t, true
}

// Names returns the names of every deferred tool.
func (m *Manager) Names() []string {
	out := make([]string, len(m.tools))
	for i, t := range m.tools {
		out[i] = t.spec.Name
	}
	return out
}

// Tools returns every deferred tool, for callers that mount them directly.
func (m *Manager) Tools() []tool.Tool {
	out := make([]tool.Tool, len(m.tools))
	for i, t := range m.tools {
		out[i] = t
	}
	return out
}

// manifestDesc caps a tool's description in the manifest: the prompt
// carries every deferred tool, so each gets one short line.
const manifestDesc = 160

// Manifest returns one line per deferred tool, "server__tool: what it
// does", for the system prompt; empty when there are none. The model loads
// the ones it needs with load_tools.
func (m *Manager) Manifest() string {
	var b strings.Builder
	for _, t := range m.tools {
		desc, _, _ := strings.Cut(t.spec.Description, "\n")
		desc = strings.TrimSpace(desc)
		if r := []rune(desc); len(r) > manifestDesc {
			desc = string(r[:manifestDesc-1]) + "…"
		}
		if desc == "" {
			desc = "(no description)"
		}
		fmt.Fprintf(&b, "%s: %s\n", t.spec.Name, desc)
	}
	return b.String()
}

// Close stops every server and waits for the goroutines that watch them.
func (m *Manager) Close() error {
	var errs []error
	for _, s := range m.servers {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("mcp: closing %q: %w", s.cfg.Name, err))
		}
	}
	return errors.Join(errs...)
}
