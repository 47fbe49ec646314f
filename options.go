package rein

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
)

// OutputMode says how a structured answer is asked of the model
// (Options.OutputMode): OutputNative, OutputTool, or "" for what the
// model's provider takes.
type OutputMode = llm.OutputMode

// Output modes (Options.OutputMode).
const (
	OutputNative = llm.OutputNative
	OutputTool   = llm.OutputTool
)

// Options configure an Agent. Model is required; everything else has a
// default. An agent is a runtime of rein's (package agent's, under the
// session scheduler): what it does not name here, it does as rein run
// does.
type Options struct {
	// Model answers the turns: OpenModel opens one from a spec such as
	// "openai:gpt-5-mini"; any llm.Model will do.
	Model Model
	// ModelName is sent as the request's model when the model needs one
	// (a model OpenModel opened knows its own).
	ModelName string
	// System is the system prompt: each new thread's instructions.
	System string
	// Tools are the program's own tools, offered to the model in every
	// turn (with a Workspace, besides rein's).
	Tools []Tool
	// MaxRounds is the exploration budget of a new thread's turns
	// (default 8).
	MaxRounds int
	// MaxOutputTokens caps each model call's output.
	MaxOutputTokens int
	// Budget holds a turn's token, cost and time budgets; a cost budget
	// needs Price.
	Budget Budget
	// Price is the model's price, what the cost is counted in.
	Price Price
	// OutputMode says how RunTyped asks for a structured answer.
	OutputMode OutputMode
	// Events receives every event of every turn; may be nil. It is called
	// from the goroutine running the turn, one event at a time.
	Events EventHandler
	// Waiter answers pauses in process: a turn that pauses is answered by
	// it and goes on; nil ends turns paused (answer with Thread.Answer).
	Waiter Waiter
	// Redact replaces the redaction of what tools return (keys and tokens
	// from the environment, and by shape, DESIGN §7.4), e.g. to redact
	// with more (redact.New); NoRedact turns redaction off.
	Redact   func(string) string
	NoRedact bool

	// Workspace is the directory the agent works in. With one, a turn has
	// rein's tools as rein run composes them there (the file tools in the
	// Sandbox mode, ask_user, web_fetch, …; rag with KnowledgeBases)
	// besides Tools; without, Tools alone.
	Workspace string
	// Sandbox is the sandbox mode of the workspace's tools: read-only,
	// workspace-write (the default) or full-access.
	Sandbox string
	// Approval is the approval policy of calls that need one: untrusted,
	// on-request (the default), or never.
	Approval string
	// KnowledgeBases are the knowledge bases (rein kb add) the turns
	// attach: rag and kb_files, and the seed of a new turn's first message.
	// They need Workspace and DB.
	KnowledgeBases []string
	// DB is the SQLite file of rein's store (rein's own is
	// $XDG_DATA_HOME/rein/rein.db): threads and their traces persist there
	// (OpenThread continues one, as rein run --thread does), and the
	// knowledge bases, memory and notes are read from it. "" keeps the
	// threads and their traces in memory.
	DB string
	// OpenTelemetry exports every turn's spans and metrics as the OTEL_*
	// environment variables say (as rein run does); Close flushes them.
	OpenTelemetry bool
	// Log receives what a person should know while turns run, as rein run
	// writes it to stderr: a tool gate that failed, a knowledge block left
	// out (nil: discarded).
	Log io.Writer
}

// libraryProvider names an agent's model to the runtime: a model the
// program opened, which the runtime never resolves.
const libraryProvider = "library"

// Agent runs turns with one model and one set of tools, on rein's session
// runtime. Close it when done; it is safe for concurrent use (one turn at a
// time per thread).
type Agent struct {
	o     Options
	spec  provider.Spec // the model's, as the runtime knows it
	rt    *agent.Runtime
	sched *session.Scheduler
	st    *store.Store      // nil in memory
	mem   *memStore         // the store in memory, nil with a DB
	x     *telemetry.Export // nil without OpenTelemetry

	mu sync.Mutex
	// outputs are the structured answers asked for by the threads' current
	// turns (RunTyped), by thread id.
	outputs map[string]*llm.Output
	// ended are the engine's outcomes of turns whose end is recorded, by
	// turn id, until the Thread waiting for the turn takes it.
	ended map[string]*loop.Outcome
	// typed are the outputs of answer types, made on first use (typed.go).
	typed sync.Map
	// handles counts the reachable Threads of each thread (forget.go).
	handles map[string]int
}

// New returns an agent, or an error saying which option is wrong.
func New(o Options) (*Agent, error) {
	if o.Model == nil {
		return nil, errors.New("rein: Options.Model is nil; open a model with rein.OpenModel")
	}
	if len(o.KnowledgeBases) > 0 && (o.Workspace == "" || o.DB == "") {
		return nil, errors.New("rein: Options.KnowledgeBases need a Workspace and a DB (the store the bases were added to)")
	}
	ctx := context.Background()
	spec := provider.Spec{Provider: libraryProvider, Model: cmp.Or(o.ModelName, "model")}
	a := &Agent{o: o, spec: spec}
	caps := provider.Capabilities{}
	if o.Price != (Price{}) {
		p := o.Price
		caps.Price = &p
	}
	resolved := &provider.Resolved{Spec: spec, Model: o.Model, Caps: caps}
	rc := agent.RuntimeConfig{
		Force: record.Settings{Model: spec.String()},
		Tools: agent.Tools{KBs: o.KnowledgeBases},
		Own:   o.Tools, NoWorkspace: o.Workspace == "",
		Base:   loop.Options{MaxOutputTokens: o.MaxOutputTokens, Budget: o.Budget, OutputMode: o.OutputMode, NoRedact: o.NoRedact},
		Events: o.Events, Log: o.Log,
		Open: func(s provider.Spec) (*provider.Resolved, error) {
			if s != spec {
				return nil, fmt.Errorf("rein: the thread names the model %s; this agent runs %s", s, spec)
			}
			// One for every thread: the runtime only reads it.
			return resolved, nil
		},
	}
	if o.DB != "" {
		st, err := store.Open(ctx, o.DB)
		if err != nil {
			return nil, fmt.Errorf("rein: %w", err)
		}
		a.st, rc.Store = st, st
	} else {
		a.mem = newMemStore()
		rc.Threads = a.mem
	}
	if o.OpenTelemetry {
		x, err := telemetry.FromEnv(ctx, "")
		if err != nil {
			a.closeStore()
			return nil, fmt.Errorf("rein: OpenTelemetry: %w", err)
		}
		a.x, rc.Export = x, x
	}
	a.rt = agent.NewRuntime(rc)
	if err := a.check(ctx); err != nil {
		a.Close(ctx)
		return nil, err
	}
	c, err := a.rt.Session()
	if err == nil {
		c.Setup, c.Outcome = a.setup, a.keep
		a.sched, err = session.New(c)
	}
	if err != nil {
		a.Close(ctx)
		return nil, fmt.Errorf("rein: %w", err)
	}
	return a, nil
}

// settings are the settings of the agent's new threads: they keep them,
// so another door (rein run --thread with the same DB) continues them the
// same way.
func (a *Agent) settings() (record.Settings, error) {
	s := record.Settings{Instructions: a.o.System, MaxRounds: a.o.MaxRounds, Approval: a.o.Approval, Sandbox: a.o.Sandbox}
	if a.o.Workspace != "" {
		dir, err := agent.WorkspaceDir(a.o.Workspace)
		if err != nil {
			return s, err
		}
		s.Workspace = dir
	}
	return s, nil
}

// check refuses options a turn could not run with, before any turn: the
// settings, the tools in the workspace, the engine's options.
func (a *Agent) check(ctx context.Context) error {
	s, err := a.settings()
	if err == nil {
		c := s
		c.Model = a.spec.String()
		err = a.rt.Check(c)
	}
	if err != nil {
		return fmt.Errorf("rein: %w", err)
	}
	eo, _, err := a.setup(ctx, record.Thread{Settings: s})
	if err == nil {
		_, err = loop.New(eo)
	}
	if err != nil {
		return fmt.Errorf("rein: %w", err)
	}
	return nil
}

// setup is the scheduler's session.Setup: the runtime's setup of the
// thread's run, with what the agent's options say over it and the
// structured answer its turn asks for.
func (a *Agent) setup(ctx context.Context, th record.Thread) (loop.Options, func(), error) {
	o, release, err := a.rt.Setup(ctx, th)
	if err != nil {
		return o, release, err
	}
	o.ModelName = a.o.ModelName
	switch {
	case a.o.Redact != nil:
		o.Redact = a.o.Redact
	case a.o.NoRedact:
		o.Redact = nil
	}
	a.mu.Lock()
	out := a.outputs[th.ID]
	a.mu.Unlock()
	if out != nil {
		o.Output = out
		// A copy: in tool mode the output's tool joins the set, and the
		// thread's other turns must not be offered it.
		o.Tools = tool.NewSet(o.Tools.Tools()...)
	}
	return o, release, nil
}

// keep is the scheduler's session.Config.Outcome: the engine's outcome of
// a run, kept for the Thread that waits for the turn.
func (a *Agent) keep(_ record.Thread, out *loop.Outcome) {
	if out == nil || out.TurnID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended == nil {
		a.ended = make(map[string]*loop.Outcome)
	}
	a.ended[out.TurnID] = out
}

// take returns the engine's outcome of turn id, once.
func (a *Agent) take(id string) *loop.Outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.ended[id]
	delete(a.ended, id)
	return out
}

// asking reports whether the thread's current turn asks for a structured
// answer.
func (a *Agent) asking(threadID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outputs[threadID] != nil
}

// ask sets the structured answer the thread's current turn asks for (nil:
// none).
func (a *Agent) ask(threadID string, out *llm.Output) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if out == nil {
		delete(a.outputs, threadID)
		return
	}
	if a.outputs == nil {
		a.outputs = make(map[string]*llm.Output)
	}
	a.outputs[threadID] = out
}

// Run runs one turn of prompt in a fresh thread, which the agent then
// forgets (with a DB the store keeps it: Outcome.ThreadID).
func (a *Agent) Run(ctx context.Context, prompt string) (*Outcome, error) {
	t := a.NewThread()
	defer t.h.release()
	return t.Run(ctx, prompt)
}

// Close interrupts the turns still running and waits for their ends to be
// recorded (until ctx ends), then closes the store and flushes the
// OpenTelemetry export. The agent runs no turn after it.
func (a *Agent) Close(ctx context.Context) error {
	var errs []error
	if a.sched != nil {
		errs = append(errs, a.sched.Close(ctx))
	}
	if a.rt != nil {
		a.rt.Close()
	}
	errs = append(errs, a.closeStore())
	if a.x != nil {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		errs = append(errs, a.x.Shutdown(flush))
	}
	return errors.Join(errs...)
}

func (a *Agent) closeStore() error {
	if a.st == nil {
		return nil
	}
	return a.st.Close()
}
