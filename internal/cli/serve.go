package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/server"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
	"github.com/reinhq/rein/session/redisrelay"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/cron"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/undo"
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
	// redis is the Redis address live events travel between nodes by
	// (--redis, else $REIN_REDIS); threads in PostgreSQL only.
	redis string
	// fleet are the flags of a node sharing threads in PostgreSQL.
	fleet fleetFlags
	// tokenFile holds named tokens, NAME=TOKEN a line
	// (server.ReadNamedTokens); named are what it held.
	tokenFile string
	named     []server.NamedToken
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --stdio | --listen ADDR",
		Short: "Serve threads over JSON-RPC 2.0 (stdio or WebSocket)",
		Long: "Serve rein's threads to editors and other programs: JSON-RPC 2.0, one object per line with\n" +
			"--stdio, one per WebSocket text frame with --listen ADDR. Listening beyond loopback needs\n" +
			"--token; clients then send \"Authorization: Bearer TOKEN\". --token-file gives a team named tokens,\n" +
			"each seeing only the threads it created. Requests must name a loopback Host\n" +
			"(or an --allowed-host) and, from a browser, come from the server's own origin (or an\n" +
			"--allowed-origin). docs/protocol.md describes the protocol.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.stdio == (f.listen != "") {
				return usageError(errors.New("give exactly one of --stdio and --listen ADDR"))
			}
			if f.tokenFile != "" {
				if f.stdio {
					return usageError(errors.New("--token-file is for --listen: a --stdio client is the one who started the server"))
				}
				named, err := readTokenFile(f.tokenFile, f.token)
				if err != nil {
					return usageError(err)
				}
				f.named = named
			}
			if f.listen != "" {
				if len(f.named) == 0 {
					if err := server.CheckListen(f.listen, f.token); err != nil {
						return usageError(err)
					}
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
			if err := f.fleet.check(); err != nil {
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
	fl.StringVar(&f.token, "token", "", "the bearer token clients must send (required beyond loopback); it sees every thread")
	fl.StringVar(&f.tokenFile, "token-file", "", "a file of named tokens, NAME=TOKEN [kb=BASE,…] a line: each client with one sees only the threads it created (and, with kb=, only those knowledge bases)")
	fl.StringVar(&f.db, "db", "", dbFlagUsage+"; or a PostgreSQL database, postgres://USER@HOST:PORT/DB, that several servers share (the tools' data stays in this machine's file)")
	fl.StringVarP(&f.model, "model", "m", "", "PROVIDER:MODEL for threads that name none; default: the first provider whose key is set")
	fl.StringVar(&f.baseURL, "base-url", "", "the provider's base URL")
	fl.StringVarP(&f.workspace, "workspace", "C", "", "the workspace of threads that name none (default: the current directory)")
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
	fl.StringVar(&f.redis, "redis", "", "HOST:PORT of the Redis that carries live events between servers sharing a PostgreSQL --db (default $"+envRedis+")")
	f.fleet.add(fl)
	fl.StringArrayVar(&f.allowedOrigins, "allowed-origin", nil, "an origin (scheme://host[:port]) whose web pages may connect besides the server's own; repeatable")
	return cmd
}

// serve runs the server until the client (stdio) or the command's context
// ends, then interrupts running turns and closes the store. cfg is the
// config file, read once for every thread the server runs.
func serve(cmd *cobra.Command, f *serveFlags, cfg *config.File, dir string) error {
	ctx := cmd.Context()
	threads, db, err := openThreads(ctx, f.db, f.fleet.maxRunning)
	if err != nil {
		return err
	}
	if threads != nil {
		defer threads.Close()
	}
	st, err := openStore(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	if threads != nil {
		// The tools' data (jobs, undo) is of threads in PostgreSQL.
		st.ThreadsElsewhere()
	}
	mcpm, err := startMCP(ctx, cmd.ErrOrStderr(), cfg)
	if err != nil {
		return usageError(err)
	}
	if mcpm != nil {
		defer mcpm.Close()
	}
	relay, err := openRelay(ctx, f.redis, threads)
	if err != nil {
		return err
	}
	if relay != nil {
		defer relay.Close()
	}
	o := f.turn.options()
	b := &serveBackend{f: f, dir: dir, logw: cmd.ErrOrStderr(), cfg: cfg, st: st, mcp: mcpm, threads: threads, relay: relay,
		noStream: f.turn.noStream, base: loop.Options{MaxOutputTokens: o.MaxOutputTokens, Budget: o.Budget}}
	sched, stop, err := b.runtime(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	// Run after the cron's stop below: no job starts a turn on a closed
	// scheduler.
	defer stop()
	// A node of a fleet takes the turns other nodes left; it stops
	// before the scheduler closes.
	fleet := b.startFleet(ctx, sched, cmd.ErrOrStderr())
	defer fleet.stop()
	// Scheduled messages (the cron tool) run while the server runs; what
	// fell due while it was down runs once now and is reported.
	cronCtx, stopCron := context.WithCancel(ctx)
	cronDone := make(chan struct{})
	crons := &cron.Scheduler{
		// A cron tool of this server wakes it (composeThreadTools), so a
		// job it adds runs at its time; jobs other processes add are seen
		// within the scheduler's poll.
		Queue: b.jobs(),
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
	endCron := func() {
		stopCron()
		<-cronDone
	}
	defer endCron()
	// A draining node claims no more due runs: they are the other nodes'
	// (the jobs are in PostgreSQL), not refused here.
	fleet.beforeDrain = endCron
	sc := server.Config{Version: version(), Sessions: sched, CheckThread: b.check, AllowedHosts: f.allowedHosts, AllowedOrigins: f.allowedOrigins, Traces: st, Defaults: b.defaults(), NamedTokens: f.named, Ready: b.ready()}
	sc.KnowledgeBases = b.agent().KnowledgeBases
	if threads == nil {
		// turn/undo: the runtime's undo, whose journal is this machine's
		// store, where the threads are unless they are in PostgreSQL.
		sc.Undo = server.UndoFunc(func(ctx context.Context, thread, turn string, force bool) (*undo.Result, error) {
			return agent.Undo(ctx, st, thread, agent.UndoOptions{Turn: turn, Force: force, Sandbox: sandboxOptions(cfg)})
		})
	}
	srv, err := server.New(sc)
	if err != nil {
		return usageError(err)
	}
	// On a node of a fleet, SIGTERM drains first: the server runs on.
	sctx, endDrain := fleet.serving(ctx)
	defer endDrain()
	if f.stdio {
		return fleet.ended(srv.ServeStdio(sctx, fleet.stdin(cmd.InOrStdin()), cmd.OutOrStdout()))
	}
	return fleet.ended(srv.ListenAndServe(sctx, f.listen, f.token, func(a net.Addr) {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: serving on ws://%s\n", a)
		// The page, with a one-time sign-in link when there is a token
		// (as Jupyter prints one).
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: open %s in a browser\n", srv.SignInURL(a, f.token))
	}))
}

// serveBackend maps the flags of rein serve and rein chat to the runtime's
// per-thread setup (agent.Runtime: each thread's model, tools, prompt,
// redactor, price, window and spans), made on first use.
type serveBackend struct {
	f    *serveFlags
	dir  string
	logw io.Writer
	// cfg is the config file, read when the command started.
	cfg *config.File

	// noStream asks the providers for whole responses (chat's --no-stream).
	noStream bool
	// base holds the options every run starts from that a thread's config
	// does not name: chat's budgets and output limit; zero for serve.
	base loop.Options
	// compose is the tool flags to compose with (chat's --kb, --exec,
	// --capability, …), the thread's tool choices set over them; nil
	// composes serve's defaults.
	compose *toolFlags

	// st holds the threads and the tools' data (knowledge, memory, notes,
	// jobs).
	st *store.Store
	// threads, when not nil, holds the threads instead of st: a
	// PostgreSQL store several servers share (rein serve --db
	// postgres://…).
	threads *pgstore.Store
	// relay, when not nil, carries live events between the servers
	// sharing threads.
	relay *redisrelay.Relay
	// mcp is the MCP servers of the config file, shared by every thread.
	mcp *mcp.Manager
	// cronWake wakes serve's scheduler of scheduled messages after a cron
	// tool adds a job; nil (chat) has no scheduler to wake.
	cronWake func()

	// export is the OpenTelemetry export of the runtime (nil: none), set
	// before the runtime is first used.
	export *telemetry.Export

	once sync.Once
	rt   *agent.Runtime
}

// agent returns the runtime the flags map to, made on first use.
func (b *serveBackend) agent() *agent.Runtime {
	b.once.Do(func() {
		f := b.f
		defaults := record.Settings{Model: f.model, Workspace: b.dir, Approval: f.approval, Sandbox: f.sandbox, MaxRounds: f.maxRounds}
		tools := agent.Tools{Capability: defaultCapability, KBs: f.kbs}
		if c := b.compose; c != nil {
			// chat's --kb are its threads' own (record.Settings.KBs), kept
			// with each thread it makes.
			tools = agent.Tools{Capability: c.capability, Exclusive: c.exclusive, NoExec: !c.exec, Force: c.forced, Attach: c.attach}
			if defaults.Sandbox == "" {
				defaults.Sandbox = c.sandbox
			}
		}
		b.rt = agent.NewRuntime(agent.RuntimeConfig{
			Store: b.st, File: b.cfg, Defaults: defaults, MaxSandbox: f.sandbox, Tools: tools, Base: b.base,
			Provider: provider.Config{BaseURL: f.baseURL, NoStream: b.noStream, Request: f.request, Warn: warnTo(b.logw)},
			MCP:      b.mcp, Export: b.export, Log: b.logw,
			Threads: b.threadStore(), Events: b.relayHandler(), Control: b.control(), Jobs: b.jobs(),
			// Read when a job is added: serve sets it once its cron
			// scheduler exists, before any turn runs.
			CronScheduled: func() {
				if w := b.cronWake; w != nil {
					w()
				}
			},
			Detect: func() sandbox.Report { return detectSandbox() },
		})
	})
	return b.rt
}

// jobs is where the cron tool keeps its jobs and serve's scheduler finds
// them: PostgreSQL when the threads are there, shared by the nodes (each
// due run claimed by one), else the store.
func (b *serveBackend) jobs() cronQueue {
	if b.threads != nil {
		return b.threads
	}
	if b.st == nil {
		return nil
	}
	return b.st
}

// cronQueue is a store of jobs: the cron tool's and the scheduler's.
type cronQueue interface {
	cron.Store
	cron.Queue
}

// threadStore is the store several servers share (--db postgres://…),
// or nil: the runtime keeps threads in st. (A nil *pgstore.Store must not
// become a non-nil session.Store.)
func (b *serveBackend) threadStore() session.Store {
	if b.threads == nil {
		return nil
	}
	return b.threads
}

// relayHandler is the relay that carries live events to the other
// servers, or nil.
func (b *serveBackend) relayHandler() event.Handler {
	if b.relay == nil {
		return nil
	}
	return b.relay
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// defaults are the settings of threads that name none, for clients
// (initialize): a scripted default model is left out (it names a file).
func (b *serveBackend) defaults() *protocol.ThreadDefaults {
	d := &protocol.ThreadDefaults{Workspace: b.dir, Approval: b.f.approval, Sandbox: b.f.sandbox}
	if d.Sandbox == "" {
		d.Sandbox = string(sandbox.ModeWorkspaceWrite)
	}
	if spec, err := b.agent().Spec(session.ThreadConfig{}); err == nil && spec.Provider != "scripted" {
		d.Model = spec.String()
	}
	if b.cfg != nil {
		for m := range b.cfg.Models {
			if !strings.Contains(m, "*") && !strings.HasPrefix(m, "scripted:") {
				d.Models = append(d.Models, m)
			}
		}
		slices.Sort(d.Models)
	}
	return d
}

// check refuses a thread/start whose config could not run, saying how to
// allow a sandbox mode the server's --sandbox does not.
func (b *serveBackend) check(c session.ThreadConfig) error {
	err := b.agent().Check(c)
	if se, ok := errors.AsType[*agent.SandboxError](err); ok {
		return fmt.Errorf("%w; start the server with --sandbox %s to allow it", err, se.Asked)
	}
	return err
}

// setup is the session.Setup of the runs: the runtime's.
func (b *serveBackend) setup(ctx context.Context, th session.Thread) (loop.Options, func(), error) {
	return b.agent().Setup(ctx, th)
}

// close releases the workspaces once no run can use them (the scheduler
// is closed).
func (b *serveBackend) close() {
	b.agent().Close()
}

// readTokenFile reads rein serve's --token-file (server.ReadNamedTokens);
// its errors name the file and lines, never a token.
func readTokenFile(path, admin string) ([]server.NamedToken, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	defer fh.Close()
	named, err := server.ReadNamedTokens(fh, admin)
	if err != nil {
		return nil, fmt.Errorf("--token-file %s: %w", path, err)
	}
	return named, nil
}
