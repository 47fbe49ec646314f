package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/reinhq/rein/agent/task"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/askuser"
	"github.com/reinhq/rein/tools/cron"
	"github.com/reinhq/rein/tools/exec"
	"github.com/reinhq/rein/tools/fs"
	"github.com/reinhq/rein/tools/github"
	"github.com/reinhq/rein/tools/kb"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/tools/web"
	"github.com/reinhq/rein/undo"
)

// Tools are a turn's tool switches (DESIGN §7.2): what the user turned on
// and off, whichever door they came through.
type Tools struct {
	// Capability is the active capability: "workspace" (the file tools;
	// "" is the same), "none", or NAME=TOOL,TOOL,… for a bundle of
	// registered tools.
	Capability string
	// Exclusive makes the capability own the turn: only its tools,
	// ask_user, and rag and kb_files with KBs.
	Exclusive bool
	// NoExec removes exec and code_execution. Without it they are
	// offered by default, to every door's threads alike, wherever ExecCase
	// allows them: inside the sandbox, under a policy that asks for each
	// call, or in full-access mode (execGate).
	NoExec bool
	// Enable switches on optional tools; Disable removes tools whatever
	// mounts them.
	Enable, Disable []string
	// Force mounts tools whatever their gates say (tool.Composition's
	// Forced), except what keeps the user safe: forcing exec or
	// code_execution undoes NoExec (the machine's isolation or approval
	// still decides), the sandbox mode still withholds what it withholds, and
	// Disable still removes.
	Force []string
	// KBs are the knowledge bases attached; Attach the text files the
	// model reads with read_source.
	KBs, Attach []string
}

// Composition is what a turn's tools are composed from.
type Composition struct {
	Tools Tools
	// Sandbox is the sandbox mode (DESIGN §7.4); "" is workspace-write.
	Sandbox sandbox.Mode
	// Approval is the approval policy; exec without a sandbox needs one
	// that can ask.
	Approval tool.Policy
	// SandboxOptions are the config's [sandbox] settings: the limits of
	// exec's runner. The workspace composed in must have been opened with
	// the same (its deny list).
	SandboxOptions sandbox.Options
	// Store is what the knowledge tools and their gates read; nil leaves
	// them out (their gates fail closed). It also keeps the undo journal
	// unless Undo is given.
	Store *store.Store
	// Undo keeps what each turn's file tools wrote, so the turn can be
	// undone (package undo); nil is Store, and without either turns are
	// not undoable.
	Undo undo.Journal
	// MCP is the MCP servers, nil when none are configured: their tools
	// are deferred, offered through load_tools.
	MCP *mcp.Manager
	// CronScheduled is told when the cron tool adds a job, so the
	// process's cron scheduler wakes for it (nil: it finds it by polling).
	CronScheduled func()
	// Jobs keeps the cron tool's jobs; nil is Store.
	Jobs cron.Store
	// WebSearch is the config's [web_search] table: with a backend, the
	// turn gets web_search.
	WebSearch config.WebSearch
	// OwnSearch says the turn's model has a search of its own
	// (provider.Capabilities.WebSearch), which web_search then is.
	OwnSearch bool
	// Detect finds this machine's isolation (nil: sandbox.Detect); tests
	// replace it to see what each mode does with and without bubblewrap.
	Detect func() sandbox.Report
	// Log receives the gates' failures (nil: discarded).
	Log io.Writer
	// Embedders give rag the embeddings of the bases that have them (nil:
	// ProviderEmbedders from the environment and the config file).
	Embedders kb.Embedders
}

// Composed is a turn's composed tools and what their prompt is made of.
type Composed struct {
	Set    *tool.Set
	Report *tool.Report
	// Capability is the active capability, nil for "none"; its Prompt
	// joins the system prompt.
	Capability *tool.Capability
	// Knowledge gives the knowledge blocks of the system prompt and the
	// seed of the first user message.
	Knowledge *Knowledge
	// Offer is the part of the MCP servers' tools the turn may load, as
	// the sandbox mode allows; nil without servers.
	Offer *mcp.Offer
}

func (c *Composition) detect() sandbox.Report {
	if c.Detect != nil {
		return c.Detect()
	}
	return sandbox.Detect()
}

// DefaultCapability is the capability of a turn that names none: the
// workspace file tools, which is what rein runs for.
const DefaultCapability = "workspace"

// capability returns the capability of t.Capability, given the registered
// file tools; nil for "none".
func (t *Tools) capability(fileTools []string) (*tool.Capability, error) {
	var c *tool.Capability
	switch v := strings.TrimSpace(t.Capability); v {
	case "none":
		if t.Exclusive {
			return nil, &SettingError{Setting: "exclusive", Err: errors.New(`needs a capability, and the capability is "none"`)}
		}
		return nil, nil
	case "workspace", "":
		c = &tool.Capability{
			Name:   "workspace",
			Tools:  fileTools,
			Prompt: "You work in the user's workspace through the file tools; paths are relative to it.",
		}
	default:
		name, list, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, &SettingError{Setting: "capability", Err: fmt.Errorf(`%q: use "workspace", "none" or NAME=TOOL,TOOL,…`, v)}
		}
		c = &tool.Capability{Name: name}
		for t := range strings.SplitSeq(list, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.Tools = append(c.Tools, t)
			}
		}
		if len(c.Tools) == 0 {
			return nil, &SettingError{Setting: "capability", Err: fmt.Errorf("%q names no tools", v)}
		}
	}
	c.Exclusive = t.Exclusive
	return c, nil
}

// registry returns every tool rein has for the workspace ws, its commands
// run by runner, and the names of its file tools. The github tool reads
// GITHUB_TOKEN and GITHUB_API_URL. With a journal j, the tools that write
// the workspace are tracked for undo (undo.Tracker).
func registry(ws *sandbox.Workspace, runner *sandbox.Runner, j undo.Journal) (*tool.Set, []string, error) {
	wrap := func(t tool.Tool) tool.Tool { return t }
	if j != nil {
		wrap = undo.NewTracker(ws, j).Wrap
	}
	files := fs.Tools(ws)
	reg := tool.NewSet()
	for _, t := range files {
		reg.Add(wrap(t))
	}
	reg.Add(askuser.New())
	reg.Add(web.New())
	gh, err := github.New(github.ConfigFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("GITHUB_API_URL: %w", err)
	}
	reg.Add(gh)
	for _, t := range exec.Tools(ws, exec.Options{Runner: runner}) {
		reg.Add(wrap(t))
	}
	names := make([]string, len(files))
	for i, t := range files {
		names[i] = t.Spec().Name
	}
	return reg, names, nil
}

// NewRunner returns the runner of the commands of exec and code_execution
// in the sandbox mode mode, with the limits of o, on the machine detect
// reports (nil: this one).
func NewRunner(mode sandbox.Mode, o sandbox.Options, detect func() sandbox.Report) *sandbox.Runner {
	if detect == nil {
		detect = sandbox.Detect
	}
	return sandbox.NewRunnerOptions(detect(), mode, o)
}

// gates computes the turn's flags from the switches. Flags that need a
// store or a configuration rein does not have yet have no gate, so they
// are off.
func (c *Composition) gates() map[tool.Flag]tool.Gate {
	return map[tool.Flag]tool.Gate{
		tool.HasKB:   tool.On(len(c.Tools.KBs) > 0),
		tool.HasExec: c.execGate,
		// code_execution runs under the same policy as exec.
		tool.HasCode: c.execGate,
	}
}

// execGate mounts exec and code_execution by default (not under
// Tools.NoExec) where they can run in the sandbox mode (ExecCase).
func (c *Composition) execGate(context.Context) (bool, error) {
	return execDefault(c.Tools, c.Sandbox, c.Approval, c.detect())
}

// execDefault is the rule of every door (run, chat, serve and the
// library alike): exec is offered unless the switches remove it, when
// ExecCase says this machine, sandbox mode and approval policy allow it;
// otherwise the gate fails with ExecCase's reason.
func execDefault(t Tools, mode sandbox.Mode, p tool.Policy, rep sandbox.Report) (bool, error) {
	if t.NoExec {
		return false, nil
	}
	ok, why := ExecCase(mode, p, rep)
	if !ok {
		return false, errors.New(why)
	}
	return true, nil
}

// ExecCase says whether exec can be offered under the sandbox mode mode
// and the approval policy p on a machine whose isolation is rep, and why:
// in full-access mode always (on the host, as the user chose); inside
// bubblewrap in the other modes, as Codex and Claude Code offer a shell;
// without a sandbox, in read-only mode never (bubblewrap is the one way to
// keep the workspace read-only for a command), in workspace-write mode only
// when each call asks for the user's approval — so not under the policy
// never. `rein tools` and `rein doctor` print why.
func ExecCase(mode sandbox.Mode, p tool.Policy, rep sandbox.Report) (bool, string) {
	switch {
	case mode == sandbox.ModeFullAccess:
		return true, "full-access: commands run on the host without asking"
	case rep.Isolation == sandbox.IsolationBwrap:
		return true, fmt.Sprintf("%s: commands run inside bubblewrap, without asking", modeName(mode))
	case mode == sandbox.ModeReadOnly:
		return false, fmt.Sprintf("no sandbox (%s), and the read-only sandbox mode runs commands only inside bubblewrap", rep.Reason)
	case p == tool.PolicyNever:
		return false, fmt.Sprintf("no sandbox (%s), and exec without one needs approval, which the approval policy %q does not give", rep.Reason, tool.PolicyNever)
	}
	return true, fmt.Sprintf("no sandbox (%s): each command waits for your approval and runs on the host", rep.Reason)
}

func modeName(m sandbox.Mode) string {
	if m == "" {
		return string(sandbox.ModeWorkspaceWrite)
	}
	return string(m)
}

// Compose composes the tools of a turn in the workspace ws (DESIGN §7.2):
// the registry, the capability, the knowledge's tools and gates, the
// deferred MCP tools, and what the sandbox mode withholds. Gate failures
// are logged to c.Log.
func Compose(ctx context.Context, ws *sandbox.Workspace, c Composition) (*Composed, error) {
	if c.Sandbox == "" {
		c.Sandbox = sandbox.ModeWorkspaceWrite
	}
	if _, err := sandbox.ParseMode(string(c.Sandbox)); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	journal := c.Undo
	if journal == nil && c.Store != nil {
		journal = c.Store
	}
	reg, fileTools, err := registry(ws, NewRunner(c.Sandbox, c.SandboxOptions, c.detect), journal)
	if err != nil {
		return nil, err
	}
	capability, err := c.Tools.capability(fileTools)
	if err != nil {
		return nil, err
	}
	out := &Composed{Capability: capability}
	if c.MCP != nil {
		out.Offer = c.MCP.Offer(c.Sandbox == sandbox.ModeReadOnly)
	}
	k, err := LoadKnowledge(ctx, ws, KnowledgeConfig{Store: c.Store, KBs: c.Tools.KBs, Attach: c.Tools.Attach, Offer: out.Offer, CronScheduled: c.CronScheduled, Jobs: c.Jobs, Embedders: c.Embedders,
		// What every workspace sees is written only with the user's
		// approval, except where the user chose to be asked nothing.
		UserWritesUnasked: c.Sandbox == sandbox.ModeFullAccess})
	if err != nil {
		return nil, err
	}
	out.Knowledge = k
	for _, t := range k.Tools() {
		reg.Add(t)
	}
	var loader *deferredLoader
	if out.Offer != nil && len(out.Offer.Names()) > 0 {
		loader = newDeferredLoader(out.Offer)
		reg.Add(loader)
	}
	held := withheld(reg, fileTools, c.Sandbox)
	if out.Offer != nil {
		// MCP tools the sandbox mode withholds: not registered, so the
		// report only says why they are out.
		maps.Copy(held, out.Offer.Withheld())
	}
	logw := c.Log
	if logw == nil {
		logw = io.Discard
	}
	offered := addWebSearch(reg, held, c.WebSearch, c.OwnSearch, logw)
	forced := c.Tools.forced()
	sub := task.New(task.Options{})
	reg.Add(sub)
	gates := c.gates()
	maps.Copy(gates, k.Gates())
	gates[tool.HasDeferredTools] = tool.On(loader != nil)
	out.Set, out.Report = tool.Compose(ctx, tool.Composition{
		Registry:   reg,
		Enabled:    c.Tools.Enable,
		Offered:    offered,
		Gates:      gates,
		Capability: capability,
		Forced:     forced,
		Suppressed: c.Tools.Disable,
		Withheld:   held,
		Logger:     slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if loader != nil {
		loader.bind(out.Set)
	}
	sub.Bind(out.Set)
	return out, nil
}

// forced returns the tools of t.Force that bypass their gates; forcing
// exec or code_execution undoes NoExec instead, so that execGate still
// decides whether commands may run here.
func (t *Tools) forced() []string {
	var out []string
	for _, name := range t.Force {
		switch name = strings.TrimSpace(name); name {
		case "":
		case exec.ExecName, exec.CodeName:
			t.NoExec = false
		default:
			out = append(out, name)
		}
	}
	return out
}

// withheld returns the file tools the sandbox mode takes away, with why:
// in read-only mode, those that write. (The MCP tools it withholds come
// from mcp.Manager.Offer.)
func withheld(reg *tool.Set, fileTools []string, mode sandbox.Mode) map[string]string {
	out := make(map[string]string)
	if mode != sandbox.ModeReadOnly {
		return out
	}
	for _, name := range fileTools {
		if t, ok := reg.Get(name); ok && t.Spec().Access != tool.ReadOnly {
			out[name] = "the sandbox mode is read-only"
		}
	}
	return out
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
