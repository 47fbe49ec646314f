package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/cron"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/tools/memory"
)

// RuntimeConfig is what a Runtime builds every thread's runs from: the
// settings of threads that name none, and what every thread shares.
type RuntimeConfig struct {
	// Store holds the threads, their traces and the tools' data
	// (knowledge, memory, notes, jobs); nil leaves the store's tools out
	// (their gates fail closed) and Scheduler refuses to start.
	Store *store.Store
	// Threads, when not nil, holds the threads, turns and items instead
	// of Store (which keeps the tools' data): a store several servers
	// share, such as PostgreSQL. It keeps the traces too when it is a
	// session.TraceStore.
	Threads session.Store
	// Events, when not nil, receives the events of every run, whichever
	// door started it: a relay to the other servers sharing Threads.
	Events event.Handler
	// Control, when not nil, carries control notices (steer, interrupt)
	// to the other servers sharing Threads: session.Config.Control.
	Control session.Control
	// File is the config file, read once: the providers, the [sandbox]
	// table of every workspace and runner, [web_search] and [stream]. nil
	// keeps the defaults.
	File *config.File
	// Defaults are the settings of threads that name none: Model (a
	// PROVIDER:MODEL spec; "" the first provider whose key is set),
	// Workspace ("" the current directory), Approval, Sandbox and
	// MaxRounds. Instructions and tool choices are the thread's own.
	Defaults record.Settings
	// MaxSandbox is the loosest sandbox mode a thread may ask for (a
	// server's ceiling: whoever started it decided how far its threads
	// may reach); "" lets a thread choose any.
	MaxSandbox string
	// Force holds settings that win over every thread's own (its
	// non-zero fields): what a one-shot door's flags say for its turn, such
	// as another model for one turn of a thread.
	Force record.Settings
	// Tools are the tool switches every thread's turns are composed from
	// ("" capability: the workspace's file tools); a thread that names
	// tools to enable or disable (EnableTools, DisableTools) has its own
	// lists instead of Enable and Disable.
	Tools Tools
	// Base holds the options every run starts from that a thread's
	// settings do not name: budgets, the output limit.
	Base loop.Options
	// Provider is how a thread's model is opened (base URL, whole
	// responses, request settings, warnings); its File is File.
	Provider provider.Config
	// Open, when set, opens a thread's model instead of provider.Resolve:
	// for a door that has opened it already (rein run resolves it before
	// anything starts; rein demo plays a script of its own).
	Open func(spec provider.Spec) (*provider.Resolved, error)
	// MCP is the MCP servers every thread shares (nil: none).
	MCP *mcp.Manager
	// Own are the program's own tools (a library user's): every thread's
	// set has them besides what is composed; one named as a composed tool
	// replaces it.
	Own []tool.Tool
	// NoWorkspace says the threads have no workspace: nothing is composed
	// (no file tools, no always-on tools, no knowledge), a thread's tools
	// are Own alone and its system prompt its instructions alone. A
	// library agent that was given no directory to work in.
	NoWorkspace bool
	// CronScheduled is told when a cron tool adds a job, so the process's
	// cron scheduler wakes for it (nil: it finds it by polling).
	CronScheduled func()
	// Jobs keeps the cron tool's jobs; nil is Store. rein serve with its
	// threads in PostgreSQL keeps them there (pgstore.Store), shared by
	// its nodes.
	Jobs cron.Store
	// Export, when enabled, receives every run's spans and metrics
	// (telemetry.FromEnv); its owner shuts it down.
	Export *telemetry.Export
	// Detect finds this machine's isolation (nil: sandbox.Detect).
	Detect func() sandbox.Report
	// Log receives what the user should know while turns run: a gate
	// that failed, a knowledge block left out (nil: discarded).
	Log io.Writer
}

// Runtime is the per-thread setup of the session runtime, the same for
// every door (rein chat, rein serve, a library user): each thread's runs
// get its model (opened on its first run), its tools composed in its
// workspace under its sandbox mode and approval policy (shared by every
// thread of the same workspace and choices, unless load_tools can grow
// them), its system prompt with the knowledge read again for each turn,
// the redactor of the config's secrets, the model's price and context
// window, and OpenTelemetry; a new turn's first message gets the knowledge
// seed. Scheduler starts a session.Scheduler over it. It is safe for
// concurrent use.
type Runtime struct {
	c RuntimeConfig

	mu     sync.Mutex
	models map[string]modelCaps // by thread id
	// switched are the models SwitchModel chose, by thread id
	// (switch.go).
	switched map[string]string
	// tools are the sets of the threads whose set grows, by thread id;
	// shared, the others, by what they were composed from.
	tools  map[string]*threadTools
	shared map[toolsKey]*threadTools
	// own is the one set of a runtime without a workspace (NoWorkspace).
	own *threadTools
	// unmade is the growing set composed for a thread not made yet (an
	// empty id), which the first thread made with its settings takes.
	unmade *unmadeTools
	// workspaces are shared by the threads of one directory (a Workspace
	// is safe for concurrent use): one directory handle each.
	workspaces map[string]*sandbox.Workspace
	closed     bool
	secrets    *Secrets
	handlers   map[string]event.Handler // OpenTelemetry, by model spec
}

// NewRuntime returns the runtime of c. Close it when its scheduler is
// closed.
func NewRuntime(c RuntimeConfig) *Runtime {
	if c.Log == nil {
		c.Log = io.Discard
	}
	c.Provider.File = c.File
	return &Runtime{c: c}
}

// Scheduler starts the session runtime over the store: its runs set up by
// r (Setup), a new turn's first message seeded from the attached
// knowledge bases (Seed), every run's trace kept in the store and its
// events exported when Export is enabled.
func (r *Runtime) Scheduler() (*session.Scheduler, error) {
	c, err := r.Session()
	if err != nil {
		return nil, err
	}
	return session.New(c)
}

// Session returns the scheduler config Scheduler starts from, for a door
// that adds to it: its own event handler (Events), a model's check after a
// one-shot turn (Verify).
func (r *Runtime) Session() (session.Config, error) {
	if r.c.Store == nil && r.c.Threads == nil {
		return session.Config{}, errors.New("agent: the runtime has no store; give RuntimeConfig.Store or Threads")
	}
	c := session.Config{Setup: r.Setup, Input: r.Seed, Events: r.c.Events, Control: r.c.Control, Forgotten: r.Forget}
	if r.c.NoWorkspace {
		// Seed leaves every input as it is without a workspace: no copy
		// of each turn's input for it.
		c.Input = nil
	}
	if r.c.Threads != nil {
		c.Store = r.c.Threads
		if ts, ok := r.c.Threads.(session.TraceStore); ok {
			c.Traces = ts
		}
		return c, nil
	}
	c.Store, c.Traces = session.NewSQLStore(r.c.Store), r.c.Store
	return c, nil
}

// settings are the settings a thread's runs use: its own, with the
// runtime's forced ones over them.
func (r *Runtime) settings(th record.Thread) record.Settings {
	c, f := th.Settings, r.c.Force
	if m := r.switchedModel(th.ID); m != "" {
		c.Model = m
	}
	over := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	over(&c.Model, f.Model)
	over(&c.Workspace, f.Workspace)
	over(&c.Approval, f.Approval)
	over(&c.Sandbox, f.Sandbox)
	over(&c.Instructions, f.Instructions)
	if f.MaxRounds != 0 {
		c.MaxRounds = f.MaxRounds
	}
	if f.EnableTools != nil {
		c.EnableTools = f.EnableTools
	}
	if f.DisableTools != nil {
		c.DisableTools = f.DisableTools
	}
	if f.ForceTools != nil {
		c.ForceTools = f.ForceTools
	}
	if f.KBs != nil {
		c.KBs = f.KBs
	}
	return c
}

// modelCaps is a thread's model and what is known of it.
type modelCaps struct {
	m    llm.Model
	caps provider.Capabilities
}

// put sets m[k] = v, making the map on first use.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// Spec returns the model spec of a thread's settings: its own, else the
// default, else the first provider whose key is set.
func (r *Runtime) Spec(c record.Settings) (provider.Spec, error) {
	m := c.Model
	if m == "" {
		m = r.c.Defaults.Model
	}
	if m != "" {
		return provider.ParseSpec(m)
	}
	return provider.Default(provider.Config{File: r.c.File})
}

// Workspace returns the absolute workspace directory of a thread's
// settings: its own, else the default, else the current directory. It
// must exist.
func (r *Runtime) Workspace(c record.Settings) (string, error) {
	dir := c.Workspace
	if dir == "" {
		dir = r.c.Defaults.Workspace
	}
	return WorkspaceDir(dir)
}

// WorkspaceDir returns dir ("" the current directory) as an absolute
// path, checking that it is a directory; a dir that is not one is a
// *SettingError of "workspace".
func WorkspaceDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", &SettingError{Setting: "workspace", Err: fmt.Errorf("%s: %w", dir, err)}
	}
	if !st.IsDir() {
		return "", &SettingError{Setting: "workspace", Err: fmt.Errorf("%s: not a directory", dir)}
	}
	return abs, nil
}

// SandboxError is the refusal of a thread asking for a sandbox mode looser
// than the runtime allows (RuntimeConfig.MaxSandbox).
type SandboxError struct {
	// Asked is the thread's mode, Allowed the loosest the runtime allows.
	Asked, Allowed string
}

func (e *SandboxError) Error() string {
	return fmt.Sprintf("sandbox %s is looser than this runtime allows (%s)", e.Asked, e.Allowed)
}

// Check refuses a thread's settings that could not run: an unknown model,
// a workspace that is not a directory, an unknown approval policy or
// sandbox mode, a sandbox looser than the runtime allows (a
// *SandboxError), a round budget out of range.
func (r *Runtime) Check(c record.Settings) error {
	if _, err := r.Spec(c); err != nil {
		return err
	}
	if !r.c.NoWorkspace {
		if _, err := r.Workspace(c); err != nil {
			return err
		}
	}
	if _, err := tool.ParsePolicy(c.Approval); err != nil {
		return err
	}
	switch c.Sandbox {
	case "", "read-only", "workspace-write", "full-access":
	default:
		return fmt.Errorf("sandbox %q: use read-only, workspace-write or full-access", c.Sandbox)
	}
	if c.Sandbox != "" && r.c.MaxSandbox != "" && sandboxRank(c.Sandbox) > sandboxRank(r.c.MaxSandbox) {
		return &SandboxError{Asked: c.Sandbox, Allowed: r.c.MaxSandbox}
	}
	if c.MaxRounds < 0 || c.MaxRounds > loop.MaxMaxRounds {
		return fmt.Errorf("maxRounds %d: use 1..%d", c.MaxRounds, loop.MaxMaxRounds)
	}
	if len(c.KBs) > record.MaxThreadKBs {
		return fmt.Errorf("%d knowledge bases: attach at most %d", len(c.KBs), record.MaxThreadKBs)
	}
	return nil
}

// sandboxRank orders the sandbox modes from the strictest.
func sandboxRank(mode string) int {
	switch sandbox.Mode(mode) {
	case sandbox.ModeReadOnly:
		return 0
	case sandbox.ModeWorkspaceWrite:
		return 1
	}
	return 2
}

// sandboxOf is the sandbox mode of a thread's runs: its own, unless it is
// looser than the runtime allows (a thread started under a looser runtime
// keeps to this one's), else the default.
func (r *Runtime) sandboxOf(c record.Settings) string {
	if c.Sandbox != "" && (r.c.MaxSandbox == "" || sandboxRank(c.Sandbox) <= sandboxRank(r.c.MaxSandbox)) {
		return c.Sandbox
	}
	if r.c.MaxSandbox != "" {
		return r.c.MaxSandbox
	}
	return r.c.Defaults.Sandbox
}

// approval is the approval policy of a thread's runs: its own, else the
// default.
func (r *Runtime) approval(c record.Settings) string {
	if c.Approval != "" {
		return c.Approval
	}
	return r.c.Defaults.Approval
}

// model returns the thread's model, opening it on the thread's first run.
func (r *Runtime) model(th record.Thread, spec provider.Spec) (modelCaps, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.models[th.ID]; ok {
		return m, nil
	}
	var res *provider.Resolved
	var err error
	if r.c.Open != nil {
		res, err = r.c.Open(spec)
	} else {
		res, err = provider.Resolve(spec, r.c.Provider)
	}
	if err != nil {
		return modelCaps{}, err
	}
	mc := modelCaps{m: res.Model, caps: res.Caps}
	put(&r.models, th.ID, mc)
	return mc, nil
}

// Forget drops the model the runtime opened for a thread and the thread's
// own tool set (a set load_tools grew; both made again on its next run),
// so that what the runtime holds does not grow with every thread it ever
// ran. The scheduler Session configures calls it for every thread it
// drops from memory: a library agent's thread it is done with, a
// server's idle thread swept (session.Config.Forgotten).
func (r *Runtime) Forget(threadID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.models, threadID)
	delete(r.tools, threadID)
}

// Setup returns the engine options of a run of thread th: a
// session.Setup.
func (r *Runtime) Setup(ctx context.Context, th record.Thread) (loop.Options, func(), error) {
	th.Settings = r.settings(th)
	c := th.Settings
	spec, err := r.Spec(c)
	if err != nil {
		return loop.Options{}, nil, err
	}
	mc, err := r.model(th, spec)
	if err != nil {
		return loop.Options{}, nil, err
	}
	approval := r.approval(c)
	tt, err := r.threadTools(ctx, th, approval)
	if err != nil {
		return loop.Options{}, nil, err
	}
	maxRounds := c.MaxRounds
	if maxRounds == 0 {
		maxRounds = r.c.Defaults.MaxRounds
	}
	o := r.c.Base
	o.Model, o.ModelName, o.Tools, o.MaxRounds, o.Policy = mc.m, spec.Name(), tt.set, maxRounds, tool.Policy(approval)
	o.System = JoinPrompt(c.Instructions, tt.prompt(ctx, r.c.Log))
	dir := ""
	if !r.c.NoWorkspace {
		// threadTools above opened this workspace, so it exists.
		if dir, err = r.Workspace(c); err != nil {
			return loop.Options{}, nil, err
		}
	}
	o.Redact = r.secretSource().Redactor(dir)
	if err := ApplyModel(&o, spec, &mc.caps, r.c.File); err != nil {
		return loop.Options{}, nil, err
	}
	if o.Events, err = r.telemetryFor(spec); err != nil {
		return loop.Options{}, nil, err
	}
	return o, nil, nil
}

// Prepare composes the tools of a thread's runs now (Setup would on its
// first run), so that a tool switch that cannot work is refused before
// anything starts.
func (r *Runtime) Prepare(ctx context.Context, th record.Thread) error {
	th.Settings = r.settings(th)
	_, err := r.threadTools(ctx, th, r.approval(th.Settings))
	return err
}

// Seed is the runtime's session.Input: the first user message of a new
// turn gets the knowledge seed of the thread's attached bases (DESIGN
// §7.3), its sources reported on the run's events. Input without text, or
// a thread whose tools cannot be composed (its run fails anyway), is left
// as it is.
func (r *Runtime) Seed(ctx context.Context, th record.Thread, o loop.Options, turnID string, in []llm.Item) []llm.Item {
	th.Settings = r.settings(th)
	if len(r.kbsOf(th.Settings)) == 0 || r.c.NoWorkspace || len(in) == 0 || in[0].Role != llm.RoleUser {
		// No base attached: nothing to seed, and no second look at the
		// thread's tools.
		return in
	}
	tt, err := r.threadTools(ctx, th, r.approval(th.Settings))
	if err != nil {
		return in
	}
	return tt.k.SeedInput(ctx, o.Tools, th.ID, turnID, in, o.Events)
}

// secretSource returns the config file's secrets, read once.
func (r *Runtime) secretSource() *Secrets {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = NewSecrets(r.c.File)
	}
	return r.secrets
}

// telemetryFor returns the OpenTelemetry handler of the runs of the model
// spec, made on its first run; nil when nothing is exported.
func (r *Runtime) telemetryFor(spec provider.Spec) (event.Handler, error) {
	x := r.c.Export
	if x == nil || !x.Enabled() {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.handlers[spec.String()]; ok {
		return h, nil
	}
	h, err := telemetry.NewHandler(telemetry.Config{
		Provider: telemetry.ProviderName(spec.Provider), Model: spec.Name(),
		TracerProvider: x.TracerProvider, MeterProvider: x.MeterProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	put(&r.handlers, spec.String(), event.Handler(h))
	return h, nil
}

// threadTools is a composed tool set and what its system prompt is made of
// (the capability's part and the knowledge, not the thread's
// instructions). A composed set costs about 20 KB (every tool with its
// schema), so it is shared by every thread of the same workspace and tool
// choices when nothing can change it; only a set with load_tools, which
// grows the set it is bound to, is a thread's own. What must be fresh for
// each turn is not kept here: the turn's input, and its knowledge seed,
// are the engine's; the knowledge's prompt is read again for every turn.
type threadTools struct {
	set       *tool.Set
	capPrompt string
	k         *Knowledge
}

// prompt is the system prompt of a turn: the knowledge's part is read
// again each time, so that a memory written, or an AGENTS.md edited, during
// a thread shows from its next turn on.
func (tt *threadTools) prompt(ctx context.Context, logw io.Writer) string {
	if tt.k == nil {
		return tt.capPrompt
	}
	return JoinPrompt(tt.capPrompt, tt.k.Prompt(ctx, tt.set, logw))
}

// toolsKey is what a composition depends on besides the runtime's config.
// memory is whether the memory held an entry: read_memory is mounted only
// then, so the first memory written makes a new composition.
type toolsKey struct {
	dir, approval, sandbox, enabled, disabled, forced, kbs string
	memory, ownSearch                                      bool
}

// unmadeTools is a growing set composed before its thread was made, and
// what it was composed from.
type unmadeTools struct {
	key toolsKey
	tt  *threadTools
}

// grows reports whether a composed set changes while it is used: load_tools
// adds the tools it loads to it.
func grows(set *tool.Set) bool {
	_, ok := set.Get(mcp.LoadToolsName)
	return ok
}

// threadTools returns the tools and prompt of the thread's runs, composing
// them in the thread's workspace the first time. A thread's runs are one
// at a time, so two never compose a thread's own set at once.
func (r *Runtime) threadTools(ctx context.Context, th record.Thread, approval string) (*threadTools, error) {
	if r.c.NoWorkspace {
		return r.ownTools(), nil
	}
	c := th.Settings
	dir, err := r.Workspace(c)
	if err != nil {
		return nil, err
	}
	mode := r.sandboxOf(c)
	switches := r.c.Tools
	if c.EnableTools != nil || c.DisableTools != nil {
		switches.Enable, switches.Disable = c.EnableTools, c.DisableTools
	}
	if c.ForceTools != nil {
		switches.Force = c.ForceTools
	}
	switches.KBs = r.kbsOf(c)
	key := toolsKey{dir: dir, approval: approval, sandbox: mode, enabled: strings.Join(switches.Enable, "\x00"), disabled: strings.Join(switches.Disable, "\x00"), forced: strings.Join(switches.Force, "\x00"), kbs: strings.Join(switches.KBs, "\x00")}
	// The thread's model, opened before its tools, decides which search
	// web_search is.
	r.mu.Lock()
	key.ownSearch = r.models[th.ID].caps.WebSearch
	r.mu.Unlock()
	if r.c.Store != nil {
		// An error leaves it false, as the gate fails closed.
		key.memory, _ = memory.Gate(r.c.Store, MemoryScope(dir))(ctx)
	}
	r.mu.Lock()
	tt, ok := r.tools[th.ID]
	if !ok {
		tt, ok = r.shared[key]
	}
	if !ok && r.unmade != nil && r.unmade.key == key {
		// Composed by Prepare or Setup before the thread was made (rein
		// run, rein chat check their flags so): the first thread made
		// with the same settings takes it, rather than composing (and
		// offering the MCP servers' tools) again.
		tt, ok = r.unmade.tt, true
		if th.ID != "" {
			put(&r.tools, th.ID, tt)
			r.unmade = nil
		}
	}
	r.mu.Unlock()
	if ok {
		return tt, nil
	}
	ws, err := r.openWorkspace(dir)
	if err != nil {
		return nil, err
	}
	comp := Composition{
		Tools: switches, Sandbox: sandbox.Mode(mode), Approval: tool.Policy(approval),
		// The runner's limits go with the workspace's deny list: both are
		// the config's.
		SandboxOptions: sandboxOptions(r.c.File),
		Store:          r.c.Store, MCP: r.c.MCP, CronScheduled: r.c.CronScheduled, Jobs: r.c.Jobs,
		OwnSearch: key.ownSearch, Detect: r.c.Detect, Log: r.c.Log,
	}
	if r.c.File != nil {
		comp.WebSearch = r.c.File.WebSearch
	}
	composed, err := Compose(ctx, ws, comp)
	if err != nil {
		return nil, err
	}
	for _, t := range r.c.Own {
		composed.Set.Remove(t.Spec().Name)
		composed.Set.Add(t)
	}
	tt = &threadTools{set: composed.Set, k: composed.Knowledge}
	if composed.Capability != nil {
		tt.capPrompt = composed.Capability.Prompt
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if grows(tt.set) {
		if th.ID == "" {
			// A thread not made yet: kept for the first one made.
			r.unmade = &unmadeTools{key: key, tt: tt}
			return tt, nil
		}
		put(&r.tools, th.ID, tt)
		return tt, nil
	}
	if prev, ok := r.shared[key]; ok {
		return prev, nil // composed meanwhile for another thread
	}
	put(&r.shared, key, tt)
	return tt, nil
}

// ownTools returns the tools of every thread of a runtime without a
// workspace: the program's own, in one set the threads share.
func (r *Runtime) ownTools() *threadTools {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.own == nil {
		r.own = &threadTools{set: tool.NewSet(r.c.Own...)}
	}
	return r.own
}

// sandboxOptions are the config file's [sandbox] settings.
func sandboxOptions(f *config.File) sandbox.Options {
	if f == nil {
		return sandbox.Options{}
	}
	return f.Sandbox.Options()
}

// openWorkspace returns the workspace of dir, opening it on first use.
func (r *Runtime) openWorkspace(dir string) (*sandbox.Workspace, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, session.ErrClosed
	}
	if ws, ok := r.workspaces[dir]; ok {
		return ws, nil
	}
	ws, err := sandbox.OpenOptions(dir, sandboxOptions(r.c.File))
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	put(&r.workspaces, dir, ws)
	return ws, nil
}

// Close releases the workspaces; call it once no run can use them (the
// scheduler is closed).
func (r *Runtime) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for dir, ws := range r.workspaces {
		ws.Close()
		delete(r.workspaces, dir)
	}
	clear(r.tools)
	clear(r.shared)
	r.unmade = nil
}
