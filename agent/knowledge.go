package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/cron"
	"github.com/reinhq/rein/tools/kb"
	"github.com/reinhq/rein/tools/mcp"
	"github.com/reinhq/rein/tools/memory"
	"github.com/reinhq/rein/tools/notes"
	"github.com/reinhq/rein/tools/skills"
	"github.com/reinhq/rein/tools/sources"
)

// Knowledge is what a turn knows beyond its history (DESIGN §7.2, §7.3):
// the store's knowledge bases, memory and notebooks, the skills, the
// workspace's AGENTS.md and the attached sources. It gives the tools to
// register, the gates of their flags, the system prompt's blocks and the
// knowledge seed of the first user message. Every door reads it the same
// way, so a turn knows the same whichever door it came in by.
type Knowledge struct {
	st        *store.Store // nil: no store, so every store gate fails closed
	mcp       *mcp.Offer   // the deferred tools the turn may load
	kbs       []string
	workspace string
	// files is the workspace as its file tools see it: AGENTS.md is read
	// through it.
	files fs.FS
	// cronScheduled wakes the process's cron scheduler after a job is added.
	cronScheduled func()
	// jobs keeps the cron tool's jobs: st unless KnowledgeConfig.Jobs.
	jobs cron.Store
	// embedders give rag the embeddings of bases that have them.
	embedders kb.Embedders
	// userUnasked: writes to the user's memory and notebooks run without
	// the user's approval (KnowledgeConfig.UserWritesUnasked).
	userUnasked bool

	sources   []sources.Source
	skills    *skills.Catalog
	skillsErr error
	notebooks []store.Notebook
	nbErr     error
}

// memoryPromptChars bounds the memory block of the system prompt.
const memoryPromptChars = 2000

// errNoStore is why the store's gates fail when a command has no store.
var errNoStore = errors.New("no store is open for this command")

// KnowledgeConfig says where a turn's knowledge comes from.
type KnowledgeConfig struct {
	// Store holds the knowledge bases, memory and notebooks; nil leaves
	// their tools out (their gates fail closed).
	Store *store.Store
	// KBs are the knowledge bases the turn attaches.
	KBs []string
	// Attach are the text files the model reads with read_source.
	Attach []string
	// Offer is the deferred MCP tools the turn may load (nil: none).
	Offer *mcp.Offer
	// CronScheduled is told when the cron tool adds a job, so the
	// process's cron scheduler wakes for it (nil: it finds it by polling).
	CronScheduled func()
	// Jobs keeps the cron tool's jobs; nil is Store. A server whose
	// threads are in PostgreSQL keeps them there, shared by its nodes.
	Jobs cron.Store
	// Embedders give rag the embeddings endpoint of a base embedded with
	// `rein kb add --embed`; nil finds it as a model is found
	// (ProviderEmbedders: the environment and the config file).
	Embedders kb.Embedders
	// UserWritesUnasked lets write_memory and write_note write the user's
	// scope (what every workspace sees) without the user's approval. Off,
	// each such call waits for the user under every approval policy that
	// asks, and is refused under never: a prompt-injected repository
	// cannot plant text in every other workspace's prompt unseen. Compose
	// sets it in full-access mode only, where the user chose to be asked
	// nothing.
	UserWritesUnasked bool
}

// LoadKnowledge reads what the tools and prompt of a turn in the workspace
// ws need. Attached files that cannot be read are an error: the user named
// them. Everything else that fails only leaves its tools out (the gates
// fail closed).
func LoadKnowledge(ctx context.Context, ws *sandbox.Workspace, c KnowledgeConfig) (*Knowledge, error) {
	k := &Knowledge{st: c.Store, kbs: c.KBs, workspace: ws.Dir(), files: ws.FS(), mcp: c.Offer, cronScheduled: c.CronScheduled, embedders: c.Embedders, jobs: c.Jobs, userUnasked: c.UserWritesUnasked}
	if k.jobs == nil && c.Store != nil {
		k.jobs = c.Store
	}
	if k.embedders == nil {
		k.embedders = ProviderEmbedders(provider.Config{})
	}
	srcs, err := sources.Load(c.Attach)
	if err != nil {
		return nil, err
	}
	k.sources = srcs
	k.skills, k.skillsErr = skills.Load(skills.Dirs(k.workspace))
	if k.st != nil {
		k.notebooks, k.nbErr = k.st.Notebooks(ctx, store.Visible(k.workspace))
	}
	return k, nil
}

// Tools returns the tools the knowledge adds to the registry; the ones
// that need the store are left out without one.
func (k *Knowledge) Tools() []tool.Tool {
	var out []tool.Tool
	if k.st != nil {
		if len(k.kbs) > 0 {
			out = append(out, kb.Rag(k.st, k.kbs, kb.WithEmbedders(k.embedders)), kb.Files(k.st, k.kbs))
		}
		out = append(out, memory.Read(k.st, k.workspace), memory.Write(k.st, k.workspace, memory.Options{UserUnasked: k.userUnasked}))
		if k.nbErr == nil {
			out = append(out, notes.List(k.st, k.workspace, k.notebooks), notes.Write(k.st, k.workspace, k.notebooks, k.st.Items, notes.Options{UserUnasked: k.userUnasked}))
		}
		out = append(out, cron.New(k.jobs, cron.Options{Scheduled: k.cronScheduled}))
	}
	if k.skills != nil {
		out = append(out, skills.Read(k.skills))
	}
	if len(k.sources) > 0 {
		out = append(out, sources.Read(k.sources))
	}
	return out
}

// Gates computes the knowledge flags from the real stores; each fails
// closed.
func (k *Knowledge) Gates() map[tool.Flag]tool.Gate {
	g := map[tool.Flag]tool.Gate{
		tool.HasSkills:  skills.Gate(k.skills, k.skillsErr),
		tool.HasSources: sources.Gate(k.sources, nil),
	}
	if k.st == nil {
		fail := func(context.Context) (bool, error) { return false, errNoStore }
		if len(k.kbs) > 0 {
			g[tool.HasKB] = fail
		}
		g[tool.HasMemory], g[tool.HasNotebooks] = fail, fail
		return g
	}
	g[tool.HasKB] = kb.Gate(k.st, k.kbs)
	g[tool.HasMemory] = memory.Gate(k.st, k.workspace)
	nbGate := notes.Gate(k.st, k.workspace)
	g[tool.HasNotebooks] = func(ctx context.Context) (bool, error) {
		if k.nbErr != nil {
			return false, k.nbErr
		}
		return nbGate(ctx)
	}
	return g
}

// Prompt returns the system prompt's knowledge blocks, each "## name" and
// its text, for the tools the turn got: the workspace's AGENTS.md, the
// memory, the skills, the sources and the notebooks. A block whose source
// cannot be read is left out and the reason written to logw.
func (k *Knowledge) Prompt(ctx context.Context, set *tool.Set, logw io.Writer) string {
	var blocks []string
	add := func(name, text string) {
		if text = strings.TrimSpace(text); text != "" {
			blocks = append(blocks, "## "+name+"\n"+text)
		}
	}
	if k.files != nil {
		agents, err := skills.AgentsMD(k.files)
		if err != nil {
			fmt.Fprintf(logw, "rein: %v; its instructions are left out\n", err)
		}
		add("instructions", agents)
	}
	if _, ok := set.Get(memory.ReadName); ok {
		ms, err := k.st.Memories(ctx, store.Visible(k.workspace))
		if err != nil {
			fmt.Fprintf(logw, "rein: memory: %v\n", err)
		}
		add("memory", memory.Prompt(ms, memoryPromptChars))
	}
	if _, ok := set.Get(skills.ReadName); ok {
		add("skills", k.skills.Prompt())
	}
	if _, ok := set.Get(sources.ReadName); ok {
		add("sources", sources.Prompt(k.sources))
	}
	if _, ok := set.Get(notes.ListName); ok {
		add("notebooks", notes.Prompt(k.notebooks))
	}
	if _, ok := set.Get("load_tools"); ok {
		blocks = append(blocks, manifestBlock(k.mcp))
	}
	return strings.Join(blocks, "\n\n")
}

// Seed returns the user's message with the knowledge seed of the turn's
// attached bases appended, and reports its sources on h (DESIGN §7.3) as
// an event of turn turnID ("" when the turn has no id yet). It
// seeds only when rag is mounted, so a base the gate refused is not read.
func (k *Knowledge) Seed(ctx context.Context, set *tool.Set, message, threadID, turnID string, h event.Handler) string {
	if _, ok := set.Get(kb.RagName); !ok || k.st == nil {
		return message
	}
	s := kb.SeedWith(ctx, k.st, k.kbs, message, k.embedders)
	if h != nil && (len(s.Sources) > 0 || len(s.Failed) > 0) {
		e := s.Event()
		e.ThreadID, e.TurnID, e.Time = threadID, turnID, time.Now()
		h.Handle(e)
	}
	return kb.WithSeed(message, s)
}

// SeedInput is Seed for a turn's input items, as session.Config.Input
// rewrites them: the first user message's text gets the seed, its other
// parts (images, files) kept after it. Input without text is left as it
// is; k may be nil (nothing attached).
func (k *Knowledge) SeedInput(ctx context.Context, set *tool.Set, threadID, turnID string, in []llm.Item, h event.Handler) []llm.Item {
	if k == nil || len(k.kbs) == 0 || len(in) == 0 || in[0].Role != llm.RoleUser {
		return in
	}
	text := in[0].Text()
	if text == "" {
		return in
	}
	seeded := k.Seed(ctx, set, text, threadID, turnID, h)
	if seeded == text {
		return in
	}
	it := in[0]
	parts := []llm.Part{{Kind: llm.PartText, Text: seeded}}
	for _, p := range it.Parts {
		if p.Kind != llm.PartText {
			parts = append(parts, p)
		}
	}
	it.Parts = parts
	in[0] = it
	return in
}

// JoinPrompt joins the non-empty parts of a system prompt with blank lines.
func JoinPrompt(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
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
