package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/cron"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/tools/memory"
)

// serveFlags are the flags of rein serve. The model, workspace, approval,
// sandbox mode and round budget are defaults for threads that name none.
type serveFlags struct {
	stdio     bool
	listen    string
	token     string
	db        string
	model     string
	baseURL   string
	workspace string
	approval  string
	// sandbox is the sandbox mode of threads that name none (DESIGN §7.4)
	// and the loosest a thread may ask for; "" is workspace-write.
	sandbox   string
	maxRounds int
	// request is chat's request settings by flag (turnFlags.request).
	request config.Request
	// allowedHosts and allowedOrigins are what the WebSocket endpoint
	// answers besides loopback names and its own origin.
	allowedHosts, allowedOrigins []string
	// kbs are the knowledge bases every thread's turns attach: rag and
	// kb_files, and the seed of each turn's first message.
	kbs []string
	// turn holds what run and chat set by flag for every request and
	// turn, and serve for every thread's: reasoning effort, parallel
	// calls, whole responses, the output cap and the budgets.
	turn turnFlags
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --stdio | --listen ADDR",
		Short: "Serve threads over JSON-RPC 2.0 (stdio or WebSocket)",
		Long: "Serve rein's threads to editors and other programs: JSON-RPC 2.0, one object per line with\n" +
			"--stdio, one per WebSocket text frame with --listen ADDR. Listening beyond loopback needs\n" +
			"--token; clients then send \"Authorization: Bearer TOKEN\". Requests must name a loopback Host\n" +
			"(or an --allowed-host) and, from a browser, come from the server's own origin (or an\n" +
			"--allowed-origin). docs/protocol.md describes the protocol.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.stdio == (f.listen != "") {
				return usageError(errors.New("give exactly one of --stdio and --listen ADDR"))
			}
			if f.listen != "" {
				if err := server.CheckListen(f.listen, f.token); err != nil {
					return usageError(err)
				}
				if err := server.CheckAllowed(f.allowedHosts, f.allowedOrigins); err != nil {
					return usageError(err)
				}
			}
			if _, err := tool.ParsePolicy(f.approval); err != nil {
				return usageError(fmt.Errorf("--approval: %w", err))
			}
			if _, err := sandbox.ParseMode(f.sandbox); err != nil {
				return usageError(fmt.Errorf("--sandbox: %w", err))
			}
			if f.maxRounds < 0 || f.maxRounds > loop.MaxMaxRounds {
				return usageError(fmt.Errorf("--max-rounds %d: use 1..%d", f.maxRounds, loop.MaxMaxRounds))
			}
			f.turn.approval, f.turn.tools.sandbox = f.approval, f.sandbox
			if err := f.turn.check(); err != nil {
				return usageError(err)
			}
			f.request = f.turn.request()
			dir, err := (&turnFlags{workspace: f.workspace}).workspaceDir()
			if err != nil {
				return usageError(err)
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			return serve(cmd, &f, cfg, dir)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.stdio, "stdio", false, "serve one connection on stdin and stdout")
	fl.StringVar(&f.listen, "listen", "", "serve WebSocket connections on ADDR, such as 127.0.0.1:8765")
	fl.StringVar(&f.token, "token", "", "the bearer token clients must send (required beyond loopback)")
	fl.StringVar(&f.db, "db", "", dbFlagUsage)
	fl.StringVar(&f.model, "model", "", "PROVIDER:MODEL for threads that name none; default: the first provider whose key is set")
	fl.StringVar(&f.baseURL, "base-url", "", "the provider's base URL")
	fl.StringVar(&f.workspace, "workspace", "", "the workspace of threads that name none (default: the current directory)")
	fl.StringVar(&f.approval, "approval", "on-request", "the approval policy of threads that name none: never, on-request or untrusted")
	fl.StringVar(&f.sandbox, "sandbox", string(sandbox.ModeWorkspaceWrite),
		"the sandbox mode of threads that name none and the loosest a thread may ask for, as run's --sandbox: read-only (no file writes, commands in bubblewrap "+
			"with the workspace read-only, only read-only tools of trusted MCP servers), workspace-write (the workspace only), "+
			"full-access (commands on the host with the network, without asking)")
	fl.IntVar(&f.maxRounds, "max-rounds", 0, "the exploration budget of threads that name none")
	fl.StringArrayVar(&f.allowedHosts, "allowed-host", nil, "a Host name (NAME or NAME:PORT) to answer besides loopback ones, such as the name a proxy forwards; repeatable")
	fl.StringArrayVar(&f.kbs, "kb", nil, "attach the knowledge base NAME to every thread (mounts rag and kb_files, seeds each turn); repeatable")
	fl.StringVar(&f.turn.reasoningEffort, "reasoning-effort", "", "reasoning_effort of every thread's model, over the config file's (OpenAI protocols): "+strings.Join(config.ReasoningEfforts, ", "))
	fl.BoolVar(&f.turn.parallel, "parallel-tool-calls", true, "let models make several calls in one response; =false asks for one at a time, over the config file's parallel_tool_calls")
	fl.BoolVar(&f.turn.noStream, "no-stream", false, "ask the providers for whole responses instead of streams")
	fl.IntVar(&f.turn.maxOutput, "max-output", 0, "output tokens per model call")
	fl.Int64Var(&f.turn.maxTokens, "max-tokens", 0, "each turn's token budget: input + output summed over its rounds")
	fl.Float64Var(&f.turn.maxCost, "max-cost", 0, "each turn's cost budget in USD (needs a price for the model)")
	fl.DurationVar(&f.turn.timeout, "timeout", 0, "each turn's wall-clock budget, e.g. 2m")
	f.turn.fl = fl
	fl.StringArrayVar(&f.allowedOrigins, "allowed-origin", nil, "an origin (scheme://host[:port]) whose web pages may connect besides the server's own; repeatable")
	return cmd
}

// serve runs the server until the client (stdio) or the command's context
// ends, then interrupts running turns and closes the store. cfg is the
// config file, read once for every thread the server runs.
func serve(cmd *cobra.Command, f *serveFlags, cfg *config.File, dir string) error {
	ctx := cmd.Context()
	st, err := openStore(ctx, f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	mcpm, err := startMCP(ctx, cmd.ErrOrStderr(), cfg)
	if err != nil {
		return usageError(err)
	}
	if mcpm != nil {
		defer mcpm.Close()
	}
	o := f.turn.options()
	b := &serveBackend{f: f, dir: dir, logw: cmd.ErrOrStderr(), cfg: cfg, st: st, mcp: mcpm, noStream: f.turn.noStream,
		base: loop.Options{MaxOutputTokens: o.MaxOutputTokens, Budget: o.Budget}}
	sched, stop, err := b.runtime(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	// Run after the cron's stop below: no job starts a turn on a closed
	// scheduler.
	defer stop()
	// Scheduled messages (the cron tool) run while the server runs; what
	// fell due while it was down runs once now and is reported.
	cronCtx, stopCron := context.WithCancel(ctx)
	cronDone := make(chan struct{})
	crons := &cron.Scheduler{
		// A cron tool of this server wakes it (composeThreadTools), so a
		// job it adds runs at its time; jobs other processes add are seen
		// within the scheduler's poll.
		Queue: st,
		Start: func(ctx context.Context, fr cron.Firing) error {
			_, err := sched.Start(ctx, fr.Job.Thread, llm.UserText(fr.Message()))
			return err
		},
		Missed: func(fr cron.Firing, err error) {
			fmt.Fprintf(cmd.ErrOrStderr(), "rein: scheduled job %s of thread %s was due %s while the server was down; ran it now (%d later runs skipped)%s\n",
				fr.Job.ID, fr.Job.Thread, fr.Due.Format(time.RFC3339), fr.Skipped, errSuffix(err))
		},
	}
	b.cronWake = crons.Wake
	go func() {
		defer close(cronDone)
		crons.Run(cronCtx)
	}()
	defer func() {
		stopCron()
		<-cronDone
	}()
	srv, err := server.New(server.Config{Sessions: sched, CheckThread: b.check, AllowedHosts: f.allowedHosts, AllowedOrigins: f.allowedOrigins})
	if err != nil {
		return usageError(err)
	}
	if f.stdio {
		return srv.ServeStdio(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
	}
	return srv.ListenAndServe(ctx, f.listen, f.token, func(a net.Addr) {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: serving on ws://%s\n", a)
	})
}

// serveBackend builds the engine options of each thread's runs, for rein
// serve and rein chat: the model from the thread's spec (provider.Open, once
// per thread), the tools composed in its workspace (once: composing on every
// run made garbage in proportion to the turns served).
type serveBackend struct {
	f    *serveFlags
	dir  string
	logw io.Writer
	// cfg is the config file, read when the command started: the
	// providers, and the [sandbox] table of every workspace and runner
	// (sandboxOptions). nil reads the file where needed, with the sandbox's
	// defaults.
	cfg *config.File

	// noStream asks the providers for whole responses (chat's --no-stream).
	noStream bool
	// base holds the options every run starts from that a thread's config
	// does not name: chat's budgets and output limit; zero for serve.
	base loop.Options
	// compose is the tool flags to compose with (chat's --kb, --exec,
	// --capability, …), the thread's approval and tool choices set over
	// them; nil composes serve's defaults.
	compose *toolFlags

	// st holds the threads and the tools' data (knowledge, memory, notes,
	// jobs).
	st *store.Store
	// mcp is the MCP servers of the config file, shared by every thread.
	mcp *mcp.Manager
	// cronWake wakes serve's scheduler of scheduled messages after a cron
	// tool adds a job; nil (chat) has no scheduler to wake.
	cronWake func()

	mu     sync.Mutex
	models map[string]modelCaps // by thread id
	// tools are the sets of the threads whose set grows, by thread id;
	// shared, the others, by what they were composed from.
	tools  map[string]*threadTools
	shared map[toolsKey]*threadTools
	// workspaces are shared by the threads of one directory (a Workspace
	// is safe for concurrent use): one directory handle each, not one per
	// thread.
	workspaces map[string]*sandbox.Workspace // by directory
	closed     bool
	// secrets is where the runs' redactors get the config file's secrets,
	// read on the first run.
	secrets *agent.Secrets
	// export is the OpenTelemetry export of the runtime (nil: none), and
	// handlers its event handlers by model spec (telemetryFor).
	export   *telemetry.Export
	handlers map[string]event.Handler
}

// secretSource returns the config file's secrets, read once.
func (b *serveBackend) secretSource() *agent.Secrets {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.secrets == nil {
		b.secrets = agent.NewSecrets(b.cfg)
	}
	return b.secrets
}

// modelCaps is a thread's model and what is known of it.
type modelCaps struct {
	m    llm.Model
	caps provider.Capabilities
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func (b *serveBackend) spec(c session.ThreadConfig) (provider.Spec, error) {
	m := c.Model
	if m == "" {
		m = b.f.model
	}
	return chooseModel(m, b.cfg)
}

func (b *serveBackend) workspace(c session.ThreadConfig) (string, error) {
	if c.Workspace == "" {
		return b.dir, nil
	}
	return (&turnFlags{workspace: c.Workspace}).workspaceDir()
}

// check refuses a thread/start whose config could not run.
func (b *serveBackend) check(c session.ThreadConfig) error {
	if _, err := b.spec(c); err != nil {
		return err
	}
	if _, err := b.workspace(c); err != nil {
		return err
	}
	if _, err := tool.ParsePolicy(c.Approval); err != nil {
		return err
	}
	switch c.Sandbox {
	case "", "read-only", "workspace-write", "full-access":
	default:
		return fmt.Errorf("sandbox %q: use read-only, workspace-write or full-access", c.Sandbox)
	}
	if c.Sandbox != "" && b.f.sandbox != "" && sandboxRank(c.Sandbox) > sandboxRank(b.f.sandbox) {
		// The server's mode is a ceiling: whoever started it decided how
		// far its threads may reach; a client may only ask for less.
		return fmt.Errorf("sandbox %s is looser than this server allows (%s); start the server with --sandbox %s to allow it",
			c.Sandbox, b.f.sandbox, c.Sandbox)
	}
	if c.MaxRounds < 0 || c.MaxRounds > loop.MaxMaxRounds {
		return fmt.Errorf("maxRounds %d: use 1..%d", c.MaxRounds, loop.MaxMaxRounds)
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

// put sets m[k] = v, making the map on first use: a serveBackend's caches
// start as nil maps.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// model returns the thread's model, opening it on the thread's first run.
func (b *serveBackend) model(th session.Thread, spec provider.Spec) (modelCaps, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.models[th.ID]; ok {
		return m, nil
	}
	r, err := provider.Resolve(spec, provider.Config{BaseURL: b.f.baseURL, NoStream: b.noStream, File: b.cfg, Request: b.f.request, Warn: warnTo(b.logw)})
	if err != nil {
		return modelCaps{}, err
	}
	mc := modelCaps{m: r.Model, caps: r.Caps}
	put(&b.models, th.ID, mc)
	return mc, nil
}

func (b *serveBackend) setup(ctx context.Context, th session.Thread) (loop.Options, func(), error) {
	c := th.Settings
	spec, err := b.spec(c)
	if err != nil {
		return loop.Options{}, nil, err
	}
	mc, err := b.model(th, spec)
	if err != nil {
		return loop.Options{}, nil, err
	}
	m := mc.m
	approval := b.approval(c)
	tt, err := b.threadTools(ctx, th, approval)
	if err != nil {
		return loop.Options{}, nil, err
	}
	maxRounds := c.MaxRounds
	if maxRounds == 0 {
		maxRounds = b.f.maxRounds
	}
	o := b.base
	o.Model, o.ModelName, o.Tools, o.System, o.MaxRounds, o.Policy = m, spec.Model, tt.set, agent.JoinPrompt(c.Instructions, tt.prompt(ctx, b.logw)), maxRounds, tool.Policy(approval)
	if spec.Provider == "scripted" {
		o.ModelName = ""
	}
	// threadTools above opened this workspace, so it exists.
	dir, err := b.workspace(c)
	if err != nil {
		return loop.Options{}, nil, err
	}
	o.Redact = b.secretSource().Redactor(dir)
	if err := agent.ApplyModel(&o, spec, &mc.caps, b.cfg); err != nil {
		return loop.Options{}, nil, err
	}
	if o.Events, err = b.telemetryFor(spec); err != nil {
		return loop.Options{}, nil, err
	}
	return o, nil, nil
}

// approval is the approval policy of the thread's runs: its own, else the
// default.
func (b *serveBackend) approval(c session.ThreadConfig) string {
	if c.Approval != "" {
		return c.Approval
	}
	return b.f.approval
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
	k         *agent.Knowledge
}

// prompt is the system prompt of a turn: the knowledge's part is read
// again each time, so that a memory written, or an AGENTS.md edited, during
// a thread shows from its next turn on.
func (tt *threadTools) prompt(ctx context.Context, logw io.Writer) string {
	return agent.JoinPrompt(tt.capPrompt, tt.k.Prompt(ctx, tt.set, logw))
}

// toolsKey is what a composition depends on besides the server's flags.
// memory is whether the memory held an entry: read_memory is mounted only
// then, so the first memory written makes a new composition.
type toolsKey struct {
	dir, approval, sandbox, enabled, disabled, forced string
	memory, ownSearch                                 bool
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
func (b *serveBackend) threadTools(ctx context.Context, th session.Thread, approval string) (*threadTools, error) {
	c := th.Settings
	dir, err := b.workspace(c)
	if err != nil {
		return nil, err
	}
	key := toolsKey{dir: dir, approval: approval, sandbox: c.Sandbox, enabled: strings.Join(c.EnableTools, "\x00"), disabled: strings.Join(c.DisableTools, "\x00"), forced: strings.Join(c.ForceTools, "\x00")}
	// The thread's model, opened before its tools, decides which search
	// web_search is.
	b.mu.Lock()
	key.ownSearch = b.models[th.ID].caps.WebSearch
	b.mu.Unlock()
	if b.st != nil {
		// An error leaves it false, as the gate fails closed.
		key.memory, _ = memory.Gate(b.st)(ctx)
	}
	b.mu.Lock()
	tt, ok := b.tools[th.ID]
	if !ok {
		tt, ok = b.shared[key]
	}
	b.mu.Unlock()
	if ok {
		return tt, nil
	}
	ws, err := b.openWorkspace(dir)
	if err != nil {
		return nil, err
	}
	tf := &toolFlags{capability: defaultCapability, kbs: b.f.kbs}
	if b.compose != nil {
		tf = new(*b.compose)
	}
	tf.approval, tf.enabled, tf.suppressed, tf.st, tf.mcp, tf.loaded, tf.offer = approval, c.EnableTools, c.DisableTools, b.st, b.mcp, nil, nil
	tf.forced = c.ForceTools
	tf.cronScheduled = b.cronWake
	// The runner's limits go with the workspace's deny list: both are the
	// config's.
	tf.sandboxOpts = sandboxOptions(b.cfg)
	if b.cfg != nil {
		tf.webSearch = b.cfg.WebSearch
	}
	tf.ownSearch = key.ownSearch
	// The thread's sandbox mode (thread/start) wins over the default,
	// serve's --sandbox or chat's, but never goes beyond it: a thread
	// started under a looser server keeps to this one's mode.
	switch {
	case c.Sandbox != "" && (b.f.sandbox == "" || sandboxRank(c.Sandbox) <= sandboxRank(b.f.sandbox)):
		tf.sandbox = c.Sandbox
	case b.f.sandbox != "":
		tf.sandbox = b.f.sandbox
	}
	set, _, capability, err := composeTools(ctx, ws, tf, b.logw)
	if err != nil {
		return nil, err
	}
	tt = &threadTools{set: set, k: tf.loaded}
	if capability != nil {
		tt.capPrompt = capability.Prompt
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if grows(set) {
		put(&b.tools, th.ID, tt)
		return tt, nil
	}
	if prev, ok := b.shared[key]; ok {
		return prev, nil // composed meanwhile for another thread
	}
	put(&b.shared, key, tt)
	return tt, nil
}

// openWorkspace returns the workspace of dir, opening it on first use.
func (b *serveBackend) openWorkspace(dir string) (*sandbox.Workspace, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, session.ErrClosed
	}
	if ws, ok := b.workspaces[dir]; ok {
		return ws, nil
	}
	ws, err := openWorkspace(dir, sandboxOptions(b.cfg))
	if err != nil {
		return nil, err
	}
	put(&b.workspaces, dir, ws)
	return ws, nil
}

// close releases the workspaces once no run can use them (the scheduler
// is closed).
func (b *serveBackend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for dir, ws := range b.workspaces {
		ws.Close()
		delete(b.workspaces, dir)
	}
	clear(b.tools)
	clear(b.shared)
}
