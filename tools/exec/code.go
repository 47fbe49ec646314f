package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

type codeInput struct {
	Language string `json:"language" jsonschema:"the language of the snippet: python, go or sh"`
	Code     string `json:"code" jsonschema:"the complete program; for go a main package"`
	Stdin    string `json:"stdin,omitempty" jsonschema:"text given to the program on standard input"`
	Timeout  int    `json:"timeout,omitempty" jsonschema:"seconds before the program and everything it started are killed: 1 to 300, default 30"`
}

// language says how to run a snippet: the file it is written to and the
// program that runs it.
type language struct {
	file    string
	program string
	args    []string
}

var languages = map[string]language{
	"python": {file: "main.py", program: "python3", args: []string{"main.py"}},
	"go":     {file: "main.go", program: "go", args: []string{"run", "main.go"}},
	"sh":     {file: "main.sh", program: "sh", args: []string{"main.sh"}},
}

// aliases are other names models use for the languages.
var aliases = map[string]string{"python3": "python", "py": "python", "golang": "go", "shell": "sh", "bash": "sh"}

func languageNames() []string {
	names := make([]string, 0, len(languages))
	for n := range languages {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type codeTool struct {
	spec tool.Spec
	ws   *sandbox.Workspace
	opts Options
}

// CodeExecution returns the code_execution tool: a python, go or sh
// snippet written to a fresh directory and run there. The directory is
// removed afterwards; the workspace is reachable through $WORKSPACE. The
// directory is writable whatever the sandbox mode, so a snippet can run
// (and go can build) in read-only mode too.
func CodeExecution(ws *sandbox.Workspace, opts Options) tool.Tool {
	opts = opts.withDefaults()
	enum := make([]any, 0, len(languages))
	for _, n := range languageNames() {
		enum = append(enum, n)
	}
	return &codeTool{
		spec: spec[codeInput](CodeName,
			"Run a snippet of python, go or sh in a fresh empty directory and get its output and exit code; "+
				"the directory is removed afterwards, and the workspace is at $WORKSPACE. "+
				isolationNote(opts.Runner)+denyNote(ws, opts.Runner)+" "+limitsNote(opts),
			opts, map[string][]any{"language": enum}),
		ws: ws, opts: opts,
	}
}

func (t *codeTool) Spec() tool.Spec { return t.spec }

func (t *codeTool) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	var in codeInput
	if err := json.Unmarshal(call.Args, &in); err != nil {
		return tool.Output{}, fmt.Errorf("invalid arguments for code_execution: %w", err)
	}
	name := strings.ToLower(strings.TrimSpace(in.Language))
	if a, ok := aliases[name]; ok {
		name = a
	}
	lang, ok := languages[name]
	if !ok {
		return failed(fmt.Sprintf("code_execution cannot run %q: give \"language\" as one of %s",
			in.Language, strings.Join(languageNames(), ", "))), nil
	}
	if strings.TrimSpace(in.Code) == "" {
		return failed(`code_execution needs "code": the complete program to run`), nil
	}

	dir, err := os.MkdirTemp("", "rein-code-")
	if err != nil {
		return tool.Output{}, fmt.Errorf("code_execution: making its directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, lang.file), []byte(in.Code), 0o644); err != nil {
		return tool.Output{}, fmt.Errorf("code_execution: writing the snippet: %w", err)
	}

	c := sandbox.Command{
		// sh finds the program inside the sandbox and says so plainly when
		// it is missing, instead of bwrap's execvp error.
		Args: append([]string{"sh", "-c",
			`command -v "$0" >/dev/null 2>&1 || { echo "$0 is not installed here" >&2; exit 127; }; exec "$0" "$@"`,
			lang.program}, lang.args...),
		Workspace: t.ws.Dir(),
		Dir:       dir,
		Env:       []string{"WORKSPACE=" + t.ws.Dir()},
		Binds:     []sandbox.Bind{{Path: dir, Writable: true}},
		Stdin:     strings.NewReader(in.Stdin),
		Deny:      t.ws.Deny(),
	}
	if name == "go" {
		cache, err := t.goCache()
		if err != nil {
			return tool.Output{}, fmt.Errorf("code_execution: the go build cache: %w", err)
		}
		c.Binds = append(c.Binds, sandbox.Bind{Path: cache, Writable: true})
		// GOTOOLCHAIN=local: the sandbox has no network to fetch another.
		c.Env = append(c.Env, "GOCACHE="+cache, "GOPATH="+filepath.Join(dir, ".gopath"), "GOTOOLCHAIN=local")
	}
	var note string
	c.Timeout, note = clampTimeout(in.Timeout, t.opts)
	return run(ctx, call, t.opts, c, note), nil
}

// goCache returns the build cache directory, creating it.
func (t *codeTool) goCache() (string, error) {
	dir := t.opts.GoCache
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(base, "rein", "go-build")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}
