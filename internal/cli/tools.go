package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/mcp"
)

// toolFlags are the flags that decide which tools a turn gets (DESIGN §7.2,
// §13). `rein tools` has them, and so can run and chat.
type toolFlags struct {
	// approval is the approval policy to compose under (rein tools' --approval).
	approval string
	// sandbox is the turn's sandbox mode (DESIGN §7.4); "" is
	// workspace-write.
	sandbox string

	kbs        []string
	exec       bool
	enabled    []string
	suppressed []string
	forced     []string
	capability string
	exclusive  bool
	attach     []string

	// st is the store the knowledge tools and gates read, set by the
	// command before composing; nil leaves them out (their gates fail
	// closed).
	st *store.Store
	// mcp is the process's MCP servers, nil when none are configured:
	// their tools are deferred, offered through load_tools.
	mcp *mcp.Manager
	// offer is the part of mcp's tools the turn may load, as the sandbox
	// mode allows, set by composeTools.
	offer *mcp.Offer
	// loaded is the knowledge composeTools read, for the system prompt and
	// the seed.
	loaded *agent.Knowledge
	// sandboxOpts are the config's [sandbox] settings, set by the command
	// before composing: the limits of exec's runner. The workspace given
	// to composeTools must have been opened with the same (its deny list).
	sandboxOpts sandbox.Options
	// webSearch is the config's [web_search] table, set by the command
	// before composing: with a backend, the turn gets web_search.
	webSearch config.WebSearch
	// ownSearch says the model composed for (--model) has a search of its
	// own (provider.Capabilities.WebSearch), which web_search then is.
	ownSearch bool
}

func (f *toolFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.kbs, "kb", nil, "attach the knowledge base NAME (mounts rag and kb_files, seeds each turn; a thread keeps the bases it was started with); repeatable")
	fl.BoolVar(&f.exec, "exec", true, "offer exec and code_execution where the sandbox can confine them, or where each call asks for approval (rein tools says which); --exec=false or --no-tool exec removes them")
	fl.StringVar(&f.sandbox, "sandbox", string(sandbox.ModeWorkspaceWrite),
		"what tools may change: read-only (no file writes; commands in bubblewrap with the workspace read-only), "+
			"workspace-write (the workspace only; commands in bubblewrap, or on the host after approval), "+
			"full-access (commands on the host with the network, without asking)")
	fl.StringArrayVar(&f.enabled, "tool", nil, "switch on the optional tool NAME; repeatable")
	fl.StringArrayVar(&f.suppressed, "no-tool", nil, "remove the tool NAME, whatever mounts it; repeatable")
	fl.StringArrayVar(&f.forced, "force-tool", nil, "mount the tool NAME whatever its gates say (exec and code_execution still need a sandbox or approval; --no-tool and the sandbox mode still win); repeatable")
	fl.StringVar(&f.capability, "capability", defaultCapability,
		`the active capability: "workspace" (the file tools), "none", or NAME=TOOL,TOOL,… for a bundle of registered tools`)
	fl.BoolVar(&f.exclusive, "exclusive", false, "the capability owns the turn: only its tools, ask_user, and rag and kb_files with --kb")
	fl.StringArrayVar(&f.attach, "attach", nil, "attach the text FILE as a source the model reads with read_source; repeatable")
}

// defaultCapability is the capability of a turn that names none.
const defaultCapability = agent.DefaultCapability

// detectSandbox finds the isolation of this machine; tests replace it to
// see what each mode does with and without bubblewrap.
var detectSandbox = sandbox.Detect

// sandboxMode returns the sandbox mode of --sandbox.
func (f *toolFlags) sandboxMode() (sandbox.Mode, error) {
	m, err := sandbox.ParseMode(f.sandbox)
	if err != nil {
		return "", fmt.Errorf("--sandbox: %w", err)
	}
	return m, nil
}

// composeTools composes the tools of a turn in the workspace ws from the
// tool flags f (agent.Compose), and keeps on f what the turn's prompt and
// `rein tools` read: the knowledge and the MCP offer. Gate failures are
// logged to logw.
func composeTools(ctx context.Context, ws *sandbox.Workspace, f *toolFlags, logw io.Writer) (*tool.Set, *tool.Report, *tool.Capability, error) {
	mode, err := f.sandboxMode()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := agent.Compose(ctx, ws, agent.Composition{
		Tools: agent.Tools{Capability: f.capability, Exclusive: f.exclusive, NoExec: !f.exec, Enable: f.enabled,
			Disable: f.suppressed, Force: f.forced, KBs: f.kbs, Attach: f.attach},
		Sandbox: mode, Approval: tool.Policy(f.approval), SandboxOptions: f.sandboxOpts,
		Store: f.st, MCP: f.mcp, WebSearch: f.webSearch, OwnSearch: f.ownSearch, Detect: detectSandbox, Log: logw,
	})
	if err != nil {
		f.loaded, f.offer = nil, nil
		return nil, nil, nil, flagError(err)
	}
	f.loaded, f.offer = c.Knowledge, c.Offer
	return c.Set, c.Report, c.Capability, nil
}

func newToolsCmd() *cobra.Command {
	var f toolFlags
	var workspace string
	var asJSON bool
	var db, model string
	cmd := &cobra.Command{
		Use:   "tools [flags]",
		Short: "Show the tools a turn would get with these flags, and why each is in or out",
		Long: "tools composes the tool list of a turn as run would: the tools switched on\n" +
			"with --tool, the tools mounted by the turn's flags (--kb, --exec), the capability's tools,\n" +
			"then the always-on tools; --no-tool removes a tool whatever mounts it, and --sandbox read-only\n" +
			"the file tools that write and the MCP tools not read-only on a trusted server's word. It prints\n" +
			"the sandbox mode, the limits of commands and the deny list (the config's [sandbox] table), and\n" +
			"the list in order, then every other known tool with the reason it is out,\n" +
			"then the deferred tools of the config file's MCP servers (which it starts) and whether each\n" +
			"asks for approval under --approval. --model composes for that model: its own web search, where\n" +
			"it has one, is web_search, and a model in text tool mode is told of the tools in its prompt.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tf := turnFlags{workspace: workspace}
			dir, err := tf.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			f.sandboxOpts = sandboxOptions(cfg)
			f.webSearch = cfg.WebSearch
			var about *toolsModel
			if model != "" {
				spec, err := provider.ParseSpec(model)
				if err != nil {
					return usageError(fmt.Errorf("--model: %w", err))
				}
				about = modelOf(spec, cfg)
				f.ownSearch = about.OwnSearch
			}
			ws, err := openWorkspace(dir, f.sandboxOpts)
			if err != nil {
				return usageError(err)
			}
			defer ws.Close()
			// The knowledge flags come from the store; without one they
			// fail closed and the report says why.
			if st, err := store.Open(cmd.Context(), db); err == nil {
				defer st.Close()
				f.st = st
			}
			mode, err := f.sandboxMode()
			if err != nil {
				return usageError(err)
			}
			policy, err := tool.ParsePolicy(f.approval)
			if err != nil {
				return usageError(fmt.Errorf("--approval: %w", err))
			}
			m, err := startMCP(cmd.Context(), cmd.ErrOrStderr(), cfg)
			if err != nil {
				return usageError(err)
			}
			if m != nil {
				defer m.Close()
			}
			f.mcp = m
			_, rep, _, err := composeTools(cmd.Context(), ws, &f, cmd.ErrOrStderr())
			if err != nil {
				return usageError(err)
			}
			runner := newRunner(mode, f.sandboxOpts)
			out := toolsOutput{model: about, mode: mode, rep: rep, deferred: deferredTools(f.offer, policy),
				limits: newLimitsReport(runner, cfg), limitsLine: describeLimits(runner, cfg),
				deny: newDenyReport(ws.Deny(), f.sandboxOpts.Deny.Allow), exec: execLine(&f, mode, policy)}
			if asJSON {
				return writeToolsJSON(cmd.OutOrStdout(), out)
			}
			return writeToolsText(cmd.OutOrStdout(), out)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&workspace, "workspace", "C", "", "the workspace the file tools would use (default: the current directory)")
	cmd.Flags().StringVar(&f.approval, "approval", string(tool.PolicyOnRequest), "the approval policy to report under: never, on-request or untrusted")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.Flags().StringVar(&model, "model", "", "compose for the model PROVIDER:MODEL (its own web search, its tool mode); no key needed")
	return cmd
}

// toolsModel is what `rein tools --model` says of the model it composes
// for.
type toolsModel struct {
	Model string `json:"model"`
	// ToolMode is native (definitions and calls in the provider's
	// structure) or text (described in the prompt, calls parsed from the
	// text).
	ToolMode string `json:"tool_mode"`
	// OwnSearch says the provider runs the model's web_search.
	OwnSearch bool `json:"own_search"`
}

// modelOf describes spec as the provider's list knows it under the config
// file f, without opening the model.
func modelOf(spec provider.Spec, f *config.File) *toolsModel {
	caps := capabilitiesOf(spec, f)
	m := &toolsModel{Model: spec.String(), ToolMode: config.ToolModeNative, OwnSearch: caps.WebSearch}
	if list, err := provider.List(provider.Config{File: f}); err == nil {
		for _, p := range list {
			if p.Name == spec.Provider && p.ToolMode != "" {
				m.ToolMode = p.ToolMode
			}
		}
	}
	if !caps.NativeTools && caps.Source != "default" {
		m.ToolMode = config.ToolModeText
	}
	return m
}

// execLine says whether the turn gets exec and which case applies: the
// sandbox confines it, each call asks, full access, or why not.
func execLine(f *toolFlags, mode sandbox.Mode, p tool.Policy) string {
	if !f.exec && !slices.Contains(f.forced, "exec") {
		return "not offered: --exec=false"
	}
	if slices.Contains(f.suppressed, "exec") {
		return "not offered: --no-tool exec"
	}
	ok, why := agent.ExecCase(mode, p, detectSandbox())
	if !ok {
		return "not offered: " + why
	}
	return "offered; " + why + " (--no-tool exec removes it)"
}

// deferredTool is one MCP tool a turn may load with load_tools, as `rein
// tools` reports it.
type deferredTool struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	// Approval is what the approval policy does with its calls: "allow",
	// "ask" or "refuse".
	Approval string `json:"approval"`
	Reason   string `json:"reason"`
}

// deferredTools describes the tools of the offer under the policy p.
func deferredTools(o *mcp.Offer, p tool.Policy) []deferredTool {
	if o == nil {
		return nil
	}
	var out []deferredTool
	for _, name := range o.Names() {
		t, _ := o.Lookup(name)
		spec := t.Spec()
		d := deferredTool{Name: name, Server: o.Server(name)}
		switch p.Verdict(spec) {
		case tool.Allow:
			d.Approval, d.Reason = "allow", "runs without asking"
		case tool.Ask:
			d.Approval, d.Reason = "ask", "asks for your approval"
		default:
			d.Approval, d.Reason = "refuse", "refused: it needs approval, which --approval never does not give"
		}
		if spec.Access == tool.ReadOnly {
			d.Reason += " (read-only)"
		}
		d.Reason = fmt.Sprintf("MCP server %q: %s", d.Server, d.Reason)
		out = append(out, d)
	}
	return out
}

// toolsOutput is what `rein tools` reports.
type toolsOutput struct {
	// model is the model composed for (--model), or nil.
	model    *toolsModel
	mode     sandbox.Mode
	rep      *tool.Report
	deferred []deferredTool
	// limits and limitsLine are the limits of commands, deny the
	// workspace's deny list: the config's [sandbox] table over the
	// defaults.
	limits     limitsReport
	limitsLine string
	deny       denyReport
	// exec says whether exec is offered and which case of the sandbox
	// applies (agent.ExecCase).
	exec string
}

func writeToolsJSON(w io.Writer, o toolsOutput) error {
	v := struct {
		Mounted []string     `json:"mounted"`
		Model   *toolsModel  `json:"model,omitempty"`
		Sandbox sandbox.Mode `json:"sandbox"`
		Limits  limitsReport `json:"limits"`
		Deny    denyReport   `json:"deny"`
		Exec    string       `json:"exec"`
		*tool.Report
		Deferred []deferredTool `json:"deferred"`
	}{Mounted: o.rep.Names(), Model: o.model, Sandbox: o.mode, Limits: o.limits, Deny: o.deny, Exec: o.exec, Report: o.rep, Deferred: o.deferred}
	if v.Mounted == nil {
		v.Mounted = []string{}
	}
	if v.Deferred == nil {
		v.Deferred = []deferredTool{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeToolsText(w io.Writer, o toolsOutput) error {
	rep, deferred := o.rep, o.deferred
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if m := o.model; m != nil {
		search := "web_search is a configured backend's, if any"
		if m.OwnSearch {
			search = "its own web search is web_search"
		}
		fmt.Fprintf(tw, "model:\t%s: %s tool calls; %s\n", m.Model, m.ToolMode, search)
	}
	fmt.Fprintf(tw, "sandbox:\t%s: %s\n", o.mode, o.mode.Describe(detectSandbox()))
	fmt.Fprintf(tw, "limits:\t%s\n", o.limitsLine)
	fmt.Fprintf(tw, "deny list:\t%s\n", o.deny)
	fmt.Fprintf(tw, "exec:\t%s\n", o.exec)
	capability := "none"
	if rep.Capability != "" {
		capability = rep.Capability
		if rep.Exclusive {
			capability += " (exclusive)"
		}
	}
	fmt.Fprintf(tw, "capability:\t%s\n", capability)
	var flags []string
	for _, fv := range rep.Flags {
		switch {
		case fv.Skipped:
			continue
		case fv.Err != "":
			flags = append(flags, string(fv.Flag)+" failed")
		case fv.On:
			flags = append(flags, string(fv.Flag))
		}
	}
	if len(flags) == 0 {
		flags = []string{"none"}
	}
	fmt.Fprintf(tw, "flags on:\t%s\n\n", strings.Join(flags, ", "))
	in, out := 0, 0
	for _, d := range rep.Tools {
		if d.In {
			if in == 0 {
				fmt.Fprintln(tw, "in (in the order offered):")
			}
			in++
			fmt.Fprintf(tw, "  %d. %s\t%s\n", in, d.Name, d.Reason)
		}
	}
	if in == 0 {
		fmt.Fprintln(tw, "in: no tools")
	}
	for _, d := range rep.Tools {
		if !d.In {
			if out == 0 {
				fmt.Fprintln(tw, "\nout:")
			}
			out++
			fmt.Fprintf(tw, "  - %s\t%s\n", d.Name, d.Reason)
		}
	}
	for i, d := range deferred {
		if i == 0 {
			if l, _ := rep.Decision(mcp.LoadToolsName); l.In {
				fmt.Fprintln(tw, "\ndeferred (listed in the prompt; the model loads them with load_tools):")
			} else {
				fmt.Fprintln(tw, "\ndeferred, but load_tools is out, so the model cannot load them:")
			}
		}
		fmt.Fprintf(tw, "  - %s\t%s\n", d.Name, d.Reason)
	}
	return tw.Flush()
}
