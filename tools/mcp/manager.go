package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/reinhq/rein/tool"
)

// Manager holds the connected MCP servers and their tools. It is safe for
// concurrent use; one Manager serves every turn of a process.
type Manager struct {
	servers []*server
	// all offers every tool, in server order, then each server's order.
	all    Offer
	status []ServerStatus // in config order
}

// ServerStatus is how a configured server came up at Start.
type ServerStatus struct {
	Name    string
	Trusted bool
	// Tools is how many tools it listed; Err why it was left out.
	Tools int
	Err   error
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

	m := &Manager{all: Offer{byName: map[string]*remoteTool{}}}
	for i, s := range servers {
		st := ServerStatus{Name: cfgs[i].Name, Trusted: cfgs[i].Trusted, Err: errs[i]}
		if errs[i] == nil {
			st.Tools = len(s.tools)
		}
		m.status = append(m.status, st)
		if errs[i] != nil {
			log.Warn("MCP server left out", "mcp_server", cfgs[i].Name, "err", errs[i])
			continue
		}
		m.servers = append(m.servers, s)
		for _, t := range s.tools {
			if _, dup := m.all.byName[t.spec.Name]; dup {
				log.Warn("MCP tool left out: its name is taken", "tool", t.spec.Name)
				continue
			}
			m.all.byName[t.spec.Name] = t
			m.all.tools = append(m.all.tools, t)
		}
	}
	return m, nil
}

// Status returns how each configured server came up at Start, in the
// order of the configs.
func (m *Manager) Status() []ServerStatus { return append([]ServerStatus(nil), m.status...) }

// Problems returns why servers were left out at start: the errors of
// Status.
func (m *Manager) Problems() []error {
	var errs []error
	for _, st := range m.status {
		if st.Err != nil {
			errs = append(errs, st.Err)
		}
	}
	return errs
}

// Lookup returns the deferred tool named name ("server__tool").
func (m *Manager) Lookup(name string) (tool.Tool, bool) { return m.all.Lookup(name) }

// Names returns the names of every deferred tool.
func (m *Manager) Names() []string { return m.all.Names() }

// Tools returns every deferred tool, for callers that mount them directly.
func (m *Manager) Tools() []tool.Tool {
	out := make([]tool.Tool, len(m.all.tools))
	for i, t := range m.all.tools {
		out[i] = t
	}
	return out
}

// Manifest returns one line per deferred tool, "server__tool: what it
// does", for the system prompt; empty when there are none. The model loads
// the ones it needs with load_tools.
func (m *Manager) Manifest() string { return m.all.Manifest() }

// Offer returns the tools a turn may load. In the read-only sandbox mode
// (readOnly) it offers only the tools that are read-only on a trusted
// server's word (readOnlyHint and [mcp.servers.NAME] trusted = true) and
// withholds the others: an MCP tool can write anything, anywhere, and
// nothing but its server says otherwise. They are withheld rather than
// left to an approval because read-only is a promise that nothing writes,
// not a question to ask on each call — as write_file and edit_file are
// withheld, and exec runs only inside bubblewrap — and because a withheld
// tool is not in the prompt's manifest, so the model does not spend
// rounds on it.
func (m *Manager) Offer(readOnly bool) *Offer {
	o := &Offer{byName: map[string]*remoteTool{}, withheld: map[string]string{}}
	for _, t := range m.all.tools {
		if readOnly {
			if why := t.readOnlyWithheld(); why != "" {
				o.withheld[t.spec.Name] = why
				continue
			}
		}
		o.tools = append(o.tools, t)
		o.byName[t.spec.Name] = t
	}
	return o
}

// Offer is the part of a Manager's tools one turn may load: a Catalog for
// load_tools, with its manifest, and the tools it withholds with why.
type Offer struct {
	tools    []*remoteTool
	byName   map[string]*remoteTool
	withheld map[string]string
}

// Lookup returns the offered tool named name.
func (o *Offer) Lookup(name string) (tool.Tool, bool) {
	t, ok := o.byName[name]
	if !ok {
		return nil, false
	}
	return t, true
}

// Names returns the names of the offered tools.
func (o *Offer) Names() []string { return names(o.tools) }

// Manifest is Manager.Manifest of the offered tools.
func (o *Offer) Manifest() string { return manifest(o.tools) }

// Withheld returns the tools the offer leaves out, each with why.
func (o *Offer) Withheld() map[string]string { return maps.Clone(o.withheld) }

// WithheldReason returns why the tool named name is withheld, if it is.
func (o *Offer) WithheldReason(name string) (string, bool) {
	why, ok := o.withheld[name]
	return why, ok
}

// Server returns the name of the server of the offered tool named name.
func (o *Offer) Server(name string) string {
	if t, ok := o.byName[name]; ok {
		return t.srv.cfg.Name
	}
	return ""
}

func names(tools []*remoteTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.spec.Name
	}
	return out
}

// manifestDesc caps a tool's description in the manifest: the prompt
// carries every deferred tool, so each gets one short line.
const manifestDesc = 160

func manifest(tools []*remoteTool) string {
	var b strings.Builder
	for _, t := range tools {
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

// Close stops every server, all at once, and waits for the goroutines that
// watch them.
func (m *Manager) Close() error {
	errs := make([]error, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Go(func() {
			if err := s.close(); err != nil {
				errs[i] = fmt.Errorf("mcp: closing %q: %w", s.cfg.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
