package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/sandbox"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp add|list|rm|import",
		Short: "The MCP servers of the config file: add one, list them, remove one, import a workspace's .mcp.json",
	}
	cmd.AddCommand(newMCPAddCmd(), newMCPListCmd(), newMCPRmCmd(), newMCPImportCmd())
	return cmd
}

// configPath is the config file rein reads, for a command that writes it.
func configPath() (string, error) {
	p := config.Path(nil)
	if p == "" {
		return "", errors.New("no config file path: set HOME or XDG_CONFIG_HOME")
	}
	return p, nil
}

func newMCPAddCmd() *cobra.Command {
	var url string
	var env, headers []string
	var trusted bool
	var callTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "add NAME -- COMMAND [ARGS…] | add NAME --url URL",
		Short: "Add an MCP server to the config file: a command (stdio) or a URL (streamable HTTP)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rest := args[0], args[1:]
			s := config.MCPServer{URL: url, Trusted: trusted, CallTimeout: callTimeout}
			if len(rest) > 0 {
				if cmd.ArgsLenAtDash() != 1 {
					return usageError(errors.New("put the server's command after --: rein mcp add NAME -- COMMAND ARGS…"))
				}
				s.Command, s.Args = rest[0], rest[1:]
			}
			var err error
			if s.Env, err = keyValues("--env", env); err != nil {
				return usageError(err)
			}
			if s.Headers, err = keyValues("--header", headers); err != nil {
				return usageError(err)
			}
			path, err := configPath()
			if err != nil {
				return usageError(err)
			}
			if err := config.AddMCPServer(path, name, s); err != nil {
				return usageError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added MCP server %s to %s; rein doctor shows whether it starts\n", name, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the server's streamable HTTP endpoint")
	cmd.Flags().StringArrayVar(&env, "env", nil, "KEY=VALUE added to a command server's environment ($VAR expanded when it starts); repeatable")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "KEY=VALUE sent with every request to a URL server; repeatable")
	cmd.Flags().BoolVar(&trusted, "trusted", false, "its tools run without asking (only for a server you trust)")
	cmd.Flags().DurationVar(&callTimeout, "call-timeout", 0, "bound on one tool call (default: the MCP client's)")
	return cmd
}

// keyValues parses KEY=VALUE flags.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

func newMCPListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the config file's MCP servers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			if len(f.MCP.Servers) == 0 {
				fmt.Fprintln(out, "no MCP servers; rein mcp add NAME -- COMMAND ARGS… adds one, rein mcp import a workspace's .mcp.json")
				return nil
			}
			names := make([]string, 0, len(f.MCP.Servers))
			for n := range f.MCP.Servers {
				names = append(names, n)
			}
			sort.Strings(names)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSERVER\tTRUSTED")
			for _, n := range names {
				s := f.MCP.Servers[n]
				what := s.URL
				if s.Command != "" {
					what = strings.Join(append([]string{s.Command}, s.Args...), " ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%v\n", n, shorten(what, 70), s.Trusted)
			}
			return tw.Flush()
		},
	}
}

func newMCPRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove an MCP server from the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := configPath()
			if err != nil {
				return usageError(err)
			}
			if err := config.RemoveMCPServer(path, args[0]); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed MCP server %s from %s\n", args[0], path)
			return nil
		},
	}
}

func newMCPImportCmd() *cobra.Command {
	var workspace string
	var yes bool
	cmd := &cobra.Command{
		Use:   "import [-C DIR] [--yes]",
		Short: "Add the servers of the workspace's .mcp.json (Claude Code's format) to the config file, after you confirm",
		Long: "import reads .mcp.json in the workspace, shows the servers it would add — each one a command\n" +
			"rein will run, or a URL it will call — and adds them once you confirm (--yes: without asking,\n" +
			"for scripts). Servers already configured by name are left as they are.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tf := turnFlags{workspace: workspace}
			dir, err := tf.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			src := filepath.Join(dir, ".mcp.json")
			data, err := readMCPJSON(dir)
			if err != nil {
				return usageError(fmt.Errorf("no .mcp.json to import: %w", err))
			}
			servers, skipped, err := config.MCPJSON(data)
			if err != nil {
				return usageError(err)
			}
			f, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			var names []string
			for n := range servers {
				if _, ok := f.MCP.Servers[n]; ok {
					fmt.Fprintf(out, "  = %s: configured already, left as it is\n", n)
					continue
				}
				names = append(names, n)
			}
			sort.Strings(names)
			for n, why := range skipped {
				fmt.Fprintf(out, "  ✗ %s: %s\n", n, why)
			}
			if len(names) == 0 {
				fmt.Fprintln(out, "nothing to import from", src)
				return nil
			}
			fmt.Fprintf(out, "%s would add, to be started by rein:\n", src)
			for _, n := range names {
				s := servers[n]
				what := "calls " + s.URL
				if s.Command != "" {
					what = "runs " + strings.Join(append([]string{s.Command}, s.Args...), " ")
				}
				fmt.Fprintf(out, "  + %s: %s\n", n, what)
			}
			if !yes {
				if !readerIsTerminal(cmd.InOrStdin()) {
					return usageError(errors.New("not imported: confirm on a terminal, or pass --yes"))
				}
				if !confirm(cmd.InOrStdin(), out, "add them? [y/N] ") {
					fmt.Fprintln(out, "nothing imported")
					return nil
				}
			}
			path, err := configPath()
			if err != nil {
				return usageError(err)
			}
			for _, n := range names {
				if err := config.AddMCPServer(path, n, servers[n]); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				fmt.Fprintf(out, "added %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "C", "", "the workspace whose .mcp.json to import (default: the current directory)")
	cmd.Flags().BoolVar(&yes, "yes", false, "import without asking")
	return cmd
}

// confirm asks question on out and reads a yes from in.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// maxMCPJSON bounds a workspace's .mcp.json: a list of servers, not data.
const maxMCPJSON = 1 << 20

// readMCPJSON reads the workspace's .mcp.json as the file tools read a
// file of a repository nobody vouched for: through the sandbox (no link
// out of the workspace, no FIFO or device, the deny list) and never past
// the bound.
func readMCPJSON(dir string) ([]byte, error) {
	ws, err := sandbox.Open(dir)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	f, err := ws.Open(".mcp.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMCPJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxMCPJSON {
		return nil, fmt.Errorf(".mcp.json is over %d bytes", maxMCPJSON)
	}
	return data, nil
}
