// Package exec provides the tools that run programs (DESIGN §7.3): exec
// runs a shell command in the workspace and code_execution runs a snippet
// of python, go or sh in a fresh directory. Both run through a
// sandbox.Runner, as its sandbox mode says (DESIGN §7.4). In
// workspace-write mode they run inside bubblewrap when it works here (no
// network, the system read-only, only the workspace writable and every
// .git in it read-only, paths not yet created included), otherwise as
// plain subprocesses that declare NeedsApproval, so they run only after
// the user agrees, and whose description says what is then not enforced.
// In read-only mode they run only inside bubblewrap, with the workspace
// read-only too. In full-access mode they run as plain subprocesses
// without asking: the user chose it. Whatever the mode, the environment
// is an allow-list (sandbox.CommandEnv), no process a command starts
// outlives the call (it ends, times out or is cancelled), and the
// runner's resource limits apply (memory, CPU time, file size, open
// files, and in bubblewrap processes); a result says which limit stopped
// a command. Inside bubblewrap the workspace's deny list is masked.
package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// Tool names.
const (
	ExecName = "exec"
	CodeName = "code_execution"
)

// Defaults of Options.
const (
	DefaultTimeout   = 30 * time.Second
	MaxTimeout       = 300 * time.Second
	DefaultMaxOutput = 10_000
)

// Options configures the tools. The zero value uses the sandbox Detect
// finds and the defaults above.
type Options struct {
	// Runner runs the commands, in its sandbox mode; nil means
	// sandbox.NewRunner(sandbox.Detect()), in workspace-write mode.
	Runner *sandbox.Runner
	// DefaultTimeout applies when the model gives none (DefaultTimeout).
	DefaultTimeout time.Duration
	// MaxTimeout caps what the model may ask for (MaxTimeout).
	MaxTimeout time.Duration
	// MaxOutput is how many bytes of output the model sees, head and tail
	// together (DefaultMaxOutput).
	MaxOutput int
	// GoCache is the build cache code_execution gives go, kept between
	// runs so a snippet does not rebuild the standard library; empty means
	// rein/go-build under the user's cache directory.
	GoCache string
}

func (o Options) withDefaults() Options {
	if o.Runner == nil {
		o.Runner = sandbox.NewRunner(sandbox.Detect())
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = MaxTimeout
	}
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	return o
}

// Tools returns exec and code_execution for the workspace ws.
func Tools(ws *sandbox.Workspace, opts Options) []tool.Tool {
	return []tool.Tool{Exec(ws, opts), CodeExecution(ws, opts)}
}

type execInput struct {
	Command string `json:"command" jsonschema:"the shell command, run with sh -c in the workspace root"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are killed: 1 to 300, default 30"`
}

type execTool struct {
	spec tool.Spec
	ws   *sandbox.Workspace
	opts Options
}

// Exec returns the exec tool: a shell command run with sh -c in the
// workspace root.
func Exec(ws *sandbox.Workspace, opts Options) tool.Tool {
	opts = opts.withDefaults()
	return &execTool{
		spec: spec[execInput](ExecName,
			"Run a shell command (sh -c) in the workspace root and get its output and exit code. "+
				isolationNote(opts.Runner)+denyNote(ws, opts.Runner)+" "+limitsNote(opts),
			opts, nil),
		ws: ws, opts: opts,
	}
}

func (t *execTool) Spec() tool.Spec { return t.spec }

func (t *execTool) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	var in execInput
	if err := json.Unmarshal(call.Args, &in); err != nil {
		return tool.Output{}, fmt.Errorf("invalid arguments for exec: %w", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return failed(`exec needs a "command": the shell command to run, such as "ls -la" or "go test ./..."`), nil
	}
	timeout, note := clampTimeout(in.Timeout, t.opts)
	return run(ctx, call, t.opts, sandbox.Command{
		Args:      []string{"sh", "-c", in.Command},
		Workspace: t.ws.Dir(),
		Timeout:   timeout,
		Deny:      t.ws.Deny(),
	}, note), nil
}

// spec builds a tool spec with the JSON Schema of In; enums adds enum
// constraints by property name, which struct tags cannot express.
func spec[In any](name, desc string, opts Options, enums map[string][]any) tool.Spec {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		// The input types are this package's own; they always have a
		// schema, as the tests show.
		panic(fmt.Sprintf("exec: schema of %s: %v", name, err))
	}
	for prop, values := range enums {
		s.Properties[prop].Enum = values
	}
	schema, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("exec: schema of %s: %v", name, err))
	}
	return tool.Spec{
		Name:        name,
		Description: desc,
		Schema:      schema,
		Access:      tool.Exclusive,
		// The command enforces its own timeout; the dispatcher's deadline
		// is only a backstop beyond the longest the model may ask for.
		Timeout:       opts.MaxTimeout + 15*time.Second,
		NeedsApproval: needsApproval(opts.Runner),
	}
}

// needsApproval reports whether commands of r wait for the user: those on
// the host, unless the user chose full access.
func needsApproval(r *sandbox.Runner) bool {
	return !r.Report().Isolated() && r.Mode() != sandbox.ModeFullAccess
}

func isolationNote(r *sandbox.Runner) string {
	switch {
	case r.Mode() == sandbox.ModeReadOnly:
		return "It runs in a read-only sandbox: no network, the system and the workspace read-only, and a private /tmp that is emptied afterwards."
	case r.Mode() == sandbox.ModeFullAccess:
		return "It runs on the host with full access: the network, and every file the user can write. " + hostNote
	case r.Report().Isolated():
		return "It runs in a sandbox: no network, the system read-only, only the workspace writable but not its .git (git can read the repository, not commit or change it), and a private /tmp that is emptied afterwards."
	}
	return "It runs on the host without isolation, after the user approves it. " + hostNote
}

// hostNote says what a command on the host is not kept from, since only
// bubblewrap enforces it; what still holds is said too.
const hostNote = "Not enforced without the sandbox: it has the network, can write outside the workspace and the workspace's .git (hooks, config), and secret files such as .env are not masked. Still enforced: the environment holds only allow-listed variables, and every process the command starts is killed when the call ends."

// denyNote says what the deny list keeps from commands, when the sandbox
// enforces it.
func denyNote(ws *sandbox.Workspace, r *sandbox.Runner) string {
	if !r.Report().Isolated() || ws.Deny().Empty() {
		return ""
	}
	read, write := ws.Deny().Patterns()
	var parts []string
	if len(read) > 0 {
		parts = append(parts, "cannot read or write workspace paths matching "+strings.Join(read, ", "))
	}
	if len(write) > 0 && r.Mode() != sandbox.ModeReadOnly {
		parts = append(parts, "cannot write "+strings.Join(write, ", "))
	}
	return " By the sandbox's deny list it " + strings.Join(parts, ", and ") + "."
}

func limitsNote(o Options) string {
	return fmt.Sprintf("Default timeout %d s, at most %d s; output beyond about %d characters is cut from the middle. %s",
		int(o.DefaultTimeout.Seconds()), int(o.MaxTimeout.Seconds()), o.MaxOutput, o.Runner.DescribeLimits())
}

// memoryErrors are what programs print when an allocation fails, lower
// case: Python, Go, C (strerror and glibc), C++, the JVM, V8, bash, the
// sanitizers.
var memoryErrors = []string{
	"memoryerror", "out of memory", "outofmemory", "cannot allocate memory",
	"bad_alloc", "memory exhausted", "cannot allocate", "allocation failed",
	"failed to allocate",
}

// memoryNote says that a failed command may have hit the memory limit,
// when its output reads like a failed allocation.
func memoryNote(r *sandbox.Runner, output string) string {
	l, ok := r.Limits()
	if !ok || l.Memory <= 0 {
		return ""
	}
	out := strings.ToLower(output)
	for _, m := range memoryErrors {
		if strings.Contains(out, m) {
			return fmt.Sprintf("the command may have hit the memory limit (%s per process)", sandbox.FormatBytes(l.Memory))
		}
	}
	return ""
}

// clampTimeout turns the model's timeout in seconds into a duration within
// 1 s and the maximum, and says so when it had to change it.
func clampTimeout(sec int, o Options) (time.Duration, string) {
	if sec == 0 {
		return o.DefaultTimeout, ""
	}
	d := time.Duration(sec) * time.Second
	switch {
	case sec < 1:
		return time.Second, fmt.Sprintf("timeout %d s is below 1 s; used 1 s", sec)
	case d > o.MaxTimeout:
		return o.MaxTimeout, fmt.Sprintf("timeout %d s is above the maximum; used %d s", sec, int(o.MaxTimeout.Seconds()))
	}
	return d, ""
}

// result is the structured outcome given to UIs in Output.Meta.
type result struct {
	ExitCode   int    `json:"exit_code"`
	Limit      string `json:"limit,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Canceled   bool   `json:"canceled,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	CutBytes   int    `json:"cut_bytes,omitempty"`
	Isolation  string `json:"isolation"`
	Sandbox    string `json:"sandbox"`
	// Unreaped: processes the command started may have outlived it
	// (sandbox.Result.Unreaped).
	Unreaped bool `json:"unreaped,omitempty"`
	// Unenforced names what only bubblewrap keeps from a command, when
	// the command ran without it (unenforced).
	Unenforced []string `json:"unenforced,omitempty"`
}

// unenforced is what a command on the host is not kept from, as the
// result's meta lists it for UIs; hostNote says it to the model.
var unenforced = []string{"network", "writes outside the workspace", "writes to the workspace's .git", "deny list"}

// run runs c, streaming its output to call.Partial, and describes how it
// ended: a first line with the exit code (or the timeout), then the
// output cut to opts.MaxOutput.
func run(ctx context.Context, call tool.Call, opts Options, c sandbox.Command, note string) tool.Output {
	out := newCapped(opts.MaxOutput)
	c.Output = out
	if call.Partial != nil {
		c.Output = io.MultiWriter(out, call.Partial)
	}
	res, err := opts.Runner.Run(ctx, c)
	if err != nil {
		return failed(err.Error())
	}
	var head string
	switch {
	case res.TimedOut:
		head = fmt.Sprintf("timed out after %s: the command and every process it started were killed", c.Timeout)
	case res.Canceled:
		head = "interrupted: the command and every process it started were killed"
	case res.Limit != "":
		head = fmt.Sprintf("exit code %d, stopped by a limit (%s)", res.ExitCode, res.Limit)
	default:
		head = fmt.Sprintf("exit code %d", res.ExitCode)
	}
	head += fmt.Sprintf(" (%s)", res.Duration.Round(time.Millisecond))
	text := out.String()
	if res.ExitCode != 0 && res.Limit == "" && !res.TimedOut && !res.Canceled {
		if m := memoryNote(opts.Runner, text); m != "" {
			head += "; " + m
		}
	}
	if res.Unreaped {
		head += "; the command killed the process that ends what it leaves behind, so processes it started may still run on the host"
	}
	if note != "" {
		head += "; " + note
	}
	if text == "" {
		text = "(no output)"
	}
	r := result{
		ExitCode: res.ExitCode, Limit: res.Limit, TimedOut: res.TimedOut, Canceled: res.Canceled,
		DurationMS: res.Duration.Milliseconds(), CutBytes: out.cut(),
		Isolation: string(opts.Runner.Report().Isolation),
		Sandbox:   string(opts.Runner.Mode()),
		Unreaped:  res.Unreaped,
	}
	if !opts.Runner.Report().Isolated() {
		r.Unenforced = unenforced
	}
	meta, _ := json.Marshal(r)
	return tool.Output{
		Text:   head + "\n" + text,
		Meta:   meta,
		Failed: res.ExitCode != 0 || res.TimedOut || res.Canceled,
	}
}

func failed(msg string) tool.Output { return tool.Output{Text: msg, Failed: true} }
