package tool

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Flag is a mount condition of a turn (DESIGN §7.2): when it holds, the
// tools of its row of the flag table are mounted.
type Flag string

// The flags of the mount table.
const (
	HasKB            Flag = "has_kb"             // a knowledge base is attached
	HasSources       Flag = "has_sources"        // sources are attached to the turn
	HasMemory        Flag = "has_memory"         // the memory store is non-empty
	HasNotebooks     Flag = "has_notebooks"      // the user has notebooks
	HasSkills        Flag = "has_skills"         // skills directories hold skills
	HasDeferredTools Flag = "has_deferred_tools" // some tools are deferred (MCP)
	HasExec          Flag = "has_exec"           // exec is allowed (and can be contained)
	HasCode          Flag = "has_code"           // code_execution is allowed
)

// Mount is one row of the flag table: the tools mounted when Flag holds.
type Mount struct {
	Flag  Flag
	Tools []string
}

// mounts is the flag table of DESIGN §7.2, in its order. Every other list
// of auto-mounted names is derived from it.
var mounts = []Mount{
	{HasKB, []string{"rag", "kb_files"}},
	{HasSources, []string{"read_source"}},
	{HasMemory, []string{"read_memory"}},
	{HasNotebooks, []string{"list_notebook", "write_note"}},
	{HasSkills, []string{"read_skill"}},
	{HasDeferredTools, []string{"load_tools"}},
	{HasExec, []string{"exec"}},
	{HasCode, []string{"code_execution"}},
}

// alwaysOn are the tools of step 4, mounted in every non-exclusive turn.
// task (sub-agents, package agent/task) is among them so that every door
// has it; --no-tool task removes it.
var alwaysOn = []string{"write_memory", "web_fetch", "github", "ask_user", "cron", "task"}

// askUser is the one always-on tool an exclusive capability keeps.
const askUser = "ask_user"

// Mounts returns the flag table, in order, as a copy the caller may keep.
func Mounts() []Mount {
	out := make([]Mount, len(mounts))
	for i, m := range mounts {
		out[i] = Mount{Flag: m.Flag, Tools: slices.Clone(m.Tools)}
	}
	return out
}

// AlwaysOn returns the names of the always-on tools, in order.
func AlwaysOn() []string { return slices.Clone(alwaysOn) }

// MountedBy returns the flag that mounts the tool named name, if a row of
// the flag table names it.
func MountedBy(name string) (Flag, bool) {
	for _, m := range mounts {
		if slices.Contains(m.Tools, name) {
			return m.Flag, true
		}
	}
	return "", false
}

// Gate computes one flag for a turn. An error means the flag could not be
// known; the gate then fails closed and its tools are not mounted.
type Gate func(ctx context.Context) (bool, error)

// On returns a gate that always answers on.
func On(on bool) Gate { return func(context.Context) (bool, error) { return on, nil } }

// Capability is a named bundle of tools and a prompt block, such as a
// workspace-editing mode or a knowledge vault.
type Capability struct {
	Name string
	// Tools are the names of the tools the capability owns; they are looked
	// up in the registry.
	Tools []string
	// Prompt is the block the capability adds to the system prompt.
	Prompt string
	// Exclusive says the capability owns the turn: only its tools,
	// ask_user, and rag and kb_files when a knowledge base is attached.
	Exclusive bool
}

// Composition is what decides the tools of one turn.
type Composition struct {
	// Registry holds every tool that exists; names it lacks are skipped.
	Registry *Set
	// Optional are the names a user may switch on. Nil means every
	// registered tool that no other step governs: not in the flag table,
	// not always-on and not owned by the capability.
	Optional []string
	// Enabled are the optional tools the user switched on (step 1).
	Enabled []string
	// Offered are tools of step 1 mounted without being switched on,
	// each for the reason its value gives, after Enabled in name order:
	// web_search when a search backend is configured or the model has its
	// own search.
	Offered map[string]string
	// Gates compute the flags; a flag without a gate is off.
	Gates map[Flag]Gate
	// Capability is the active capability, if any (step 3).
	Capability *Capability
	// Forced tools are mounted bypassing every gate.
	Forced []string
	// Suppressed tools are removed whatever added them.
	Suppressed []string
	// Withheld are removed like Suppressed, each for the reason its value
	// gives, which the report shows (such as "the sandbox is read-only").
	Withheld map[string]string
	// Logger receives why gates failed and tools were skipped; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Decision says whether one tool is in a turn's set, and why.
type Decision struct {
	Name   string `json:"name"`
	In     bool   `json:"in"`
	Reason string `json:"reason"`
}

// FlagValue is one flag as its gate computed it for the turn.
type FlagValue struct {
	Flag Flag `json:"flag"`
	On   bool `json:"on"`
	// Err is why the gate failed (and the flag is off), or empty.
	Err string `json:"error,omitempty"`
	// Skipped says the flag was not computed because an exclusive
	// capability made it irrelevant.
	Skipped bool `json:"skipped,omitempty"`
}

// Report explains a composition: the tools of the set in order, then every
// other tool it knows of (the flag table, the always-on tools, the registry
// and every name it was given), each with its reason.
type Report struct {
	Capability string      `json:"capability,omitempty"`
	Exclusive  bool        `json:"exclusive,omitempty"`
	Flags      []FlagValue `json:"flags"`
	Tools      []Decision  `json:"tools"`
}

// Names returns the names of the tools in the set, in order.
func (r *Report) Names() []string {
	var out []string
	for _, d := range r.Tools {
		if d.In {
			out = append(out, d.Name)
		}
	}
	return out
}

// Decision returns the decision about the tool named name.
func (r *Report) Decision(name string) (Decision, bool) {
	for _, d := range r.Tools {
		if d.Name == name {
			return d, true
		}
	}
	return Decision{}, false
}

// Compose builds the tool set of one turn (DESIGN §7.2): the tools the user
// switched on, the conditional mounts whose flags hold, the capability's
// tools and the always-on tools, de-duplicated keeping the first; an
// exclusive capability keeps only its tools, ask_user, and rag and kb_files
// when a knowledge base is attached. Forced tools are then added bypassing
// every gate, and suppressed and withheld tools removed whatever added them.
//
// Compose never fails: a gate that errs or panics counts as off (fail
// closed), and names the registry lacks are skipped. Both are logged and
// reported.
func Compose(ctx context.Context, c Composition) (*Set, *Report) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &plan{c: &c, log: log, in: map[string]string{}, reasons: map[string][]string{}}
	cp := c.Capability
	if cp != nil && cp.Name == "" && len(cp.Tools) == 0 {
		cp = nil
	}
	exclusive := cp != nil && cp.Exclusive
	flags := p.flags(ctx, exclusive)
	p.report.Flags = flags
	on := make(map[Flag]FlagValue, len(flags))
	for _, f := range flags {
		on[f.Flag] = f
	}
	if cp != nil {
		p.report.Capability = cp.Name
		p.report.Exclusive = cp.Exclusive
	}

	why := ""
	if exclusive {
		why = fmt.Sprintf("the capability %s is exclusive", quoteName(cp.Name))
		for _, name := range cp.Tools {
			p.add(name, "owned by the capability "+quoteName(cp.Name))
		}
		p.mountRow(HasKB, on[HasKB])
		p.add(askUser, "kept by the exclusive capability "+quoteName(cp.Name))
		for _, name := range c.Enabled {
			p.skip(name, "switched on by the user, but "+why)
		}
		for _, name := range slices.Sorted(maps.Keys(c.Offered)) {
			p.skip(name, c.Offered[name]+", but "+why)
		}
		for _, m := range mounts {
			if m.Flag != HasKB {
				for _, name := range m.Tools {
					p.skip(name, why)
				}
			}
		}
		for _, name := range alwaysOn {
			p.skip(name, why)
		}
	} else {
		for _, name := range c.Enabled {
			if !slices.Contains(p.optional(cp), name) {
				p.skip(name, notOptional(name, cp))
				continue
			}
			p.add(name, "switched on by the user")
		}
		for _, name := range slices.Sorted(maps.Keys(c.Offered)) {
			p.add(name, c.Offered[name])
		}
		for _, m := range mounts {
			p.mountRow(m.Flag, on[m.Flag])
		}
		if cp != nil {
			for _, name := range cp.Tools {
				p.add(name, "owned by the capability "+quoteName(cp.Name))
			}
		}
		for _, name := range alwaysOn {
			p.add(name, "always on")
		}
	}
	for _, name := range c.Forced {
		p.add(name, "forced")
	}
	for _, name := range c.Suppressed {
		p.suppress(name, "suppressed")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Withheld)) {
		p.suppress(name, "suppressed: "+c.Withheld[name])
	}
	// Everything the registry holds is known, so the report says why each
	// registered tool is out too.
	optional := p.optional(cp)
	for _, name := range c.Registry.Names() {
		reason := why
		if !exclusive && slices.Contains(optional, name) {
			reason = "optional, not switched on"
		}
		p.skip(name, reason)
	}
	return &p.set, p.finish()
}

// plan accumulates one composition.
type plan struct {
	c   *Composition
	log *slog.Logger
	set Set
	// in holds the reason each tool of set was added.
	in map[string]string
	// reasons collects why tools were left out, in step order.
	reasons map[string][]string
	// order lists every name in order of first mention.
	order  []string
	report Report
}

func (p *plan) mention(name string) {
	if _, ok := p.reasons[name]; !ok {
		p.reasons[name] = nil
		p.order = append(p.order, name)
	}
}

// add mounts the tool named name for reason, unless it is already in the
// set (de-duplication keeps the first) or not registered.
func (p *plan) add(name, reason string) {
	p.mention(name)
	if _, ok := p.set.Get(name); ok {
		return
	}
	t, ok := p.c.Registry.Get(name)
	if !ok {
		p.log.Debug("tool not mounted: not registered", "tool", name, "would be", reason)
		p.skip(name, reason+", but not registered")
		return
	}
	p.set.Add(t)
	p.in[name] = reason
}

// skip records why the tool named name is out, if it is.
func (p *plan) skip(name, reason string) {
	p.mention(name)
	if reason != "" && !slices.Contains(p.reasons[name], reason) {
		p.reasons[name] = append(p.reasons[name], reason)
	}
}

// suppress removes the tool named name from the set, if it is there, and
// records why it is out.
func (p *plan) suppress(name, reason string) {
	if _, ok := p.set.Get(name); ok {
		reason += " (it was " + p.in[name] + ")"
		p.set.Remove(name)
	}
	p.skip(name, reason)
}

// mountRow mounts the tools of flag's row when it holds.
func (p *plan) mountRow(flag Flag, v FlagValue) {
	for _, m := range mounts {
		if m.Flag != flag {
			continue
		}
		for _, name := range m.Tools {
			switch {
			case v.On:
				p.add(name, "mounted: "+string(flag))
			case v.Err != "":
				p.skip(name, fmt.Sprintf("%s could not be computed (%s), so it counts as off", flag, v.Err))
			default:
				p.skip(name, string(flag)+" is off")
			}
		}
	}
}

// optional returns the names a user may switch on.
func (p *plan) optional(cp *Capability) []string {
	if p.c.Optional != nil {
		return p.c.Optional
	}
	var out []string
	for _, name := range p.c.Registry.Names() {
		if _, gated := MountedBy(name); gated || slices.Contains(alwaysOn, name) {
			continue
		}
		if cp != nil && slices.Contains(cp.Tools, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

func notOptional(name string, cp *Capability) string {
	if f, ok := MountedBy(name); ok {
		return fmt.Sprintf("switched on by the user, but it is mounted only when %s holds", f)
	}
	if slices.Contains(alwaysOn, name) {
		return "switched on by the user; it is always on anyway"
	}
	if cp != nil && slices.Contains(cp.Tools, name) {
		return "switched on by the user; the capability " + quoteName(cp.Name) + " owns it anyway"
	}
	return "switched on by the user, but not an optional tool"
}

// flags runs the gates, concurrently because a gate may ask a store. In an
// exclusive turn only has_kb matters.
func (p *plan) flags(ctx context.Context, exclusive bool) []FlagValue {
	out := make([]FlagValue, len(mounts))
	var wg sync.WaitGroup
	for i, m := range mounts {
		out[i].Flag = m.Flag
		if exclusive && m.Flag != HasKB {
			out[i].Skipped = true
			continue
		}
		gate := p.c.Gates[m.Flag]
		if gate == nil {
			continue
		}
		wg.Go(func() {
			on, err := runGate(ctx, gate)
			if err != nil {
				// Fail closed (DESIGN §7.2).
				p.log.Warn("tool gate failed; its tools are not mounted", "flag", string(m.Flag), "tools", m.Tools, "err", err)
				out[i].Err = err.Error()
				return
			}
			out[i].On = on
		})
	}
	wg.Wait()
	return out
}

// runGate calls gate, turning a panic into an error so that one broken
// probe cannot take the turn down.
func runGate(ctx context.Context, gate Gate) (on bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			on, err = false, fmt.Errorf("gate panicked: %v", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return gate(ctx)
}

// finish builds the report: the set's tools in order, then the rest in
// order of first mention.
func (p *plan) finish() *Report {
	r := &p.report
	for _, name := range p.set.Names() {
		r.Tools = append(r.Tools, Decision{Name: name, In: true, Reason: p.in[name]})
	}
	for _, name := range p.order {
		if _, ok := p.set.Get(name); ok {
			continue
		}
		reason := strings.Join(p.reasons[name], "; ")
		if reason == "" {
			reason = "nothing mounts it"
		}
		r.Tools = append(r.Tools, Decision{Name: name, Reason: reason})
	}
	return r
}

func quoteName(s string) string { return "\"" + s + "\"" }
