package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

func newDoctorCmd() *cobra.Command {
	var mode, db, redis string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show what works here: providers, the sandbox, ripgrep, the config and data directories",
		Long: "doctor checks this machine: which providers have a key (never printing it) and where\n" +
			"their requests go, whether exec runs inside bubblewrap and why (or why not), whether\n" +
			"grep can use ripgrep, and where rein reads its config and keeps its data. It says what\n" +
			"the sandbox mode (--sandbox, as run takes it) lets tools do here, the limits commands run\n" +
			"under and the workspace's deny list (the config's [sandbox] table over the defaults).\n" +
			"When the threads are in PostgreSQL (--db or $REIN_DB is a postgres:// URL) it checks the\n" +
			"database answers and its schema version; with --redis or $REIN_REDIS, that Redis answers.\n" +
			"It exits 1 when the config file cannot be read or the PostgreSQL store or Redis does not answer.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := sandbox.ParseMode(mode)
			if err != nil {
				return usageError(fmt.Errorf("--sandbox: %w", err))
			}
			if !doctor(cmd.Context(), cmd.OutOrStdout(), m, db, redis) {
				return exitCode(ExitFailed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&mode, "sandbox", string(sandbox.ModeWorkspaceWrite), "the sandbox mode to report on: read-only, workspace-write or full-access")
	cmd.Flags().StringVar(&db, "db", "", "the thread store to check when it is a postgres:// URL (default $"+store.EnvPath+")")
	cmd.Flags().StringVar(&redis, "redis", "", "the Redis to check, HOST:PORT (default $"+envRedis+")")
	return cmd
}

// doctor writes the report, with what the sandbox mode mode means here and
// the PostgreSQL thread store db names (--db, else $REIN_DB) and the Redis
// redis names (--redis, else $REIN_REDIS), and says
// whether everything it needs to run could be read.
func doctor(ctx context.Context, w io.Writer, mode sandbox.Mode, db, redis string) bool {
	ok := true
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)

	path := config.Path(nil)
	f, err := config.LoadDefault(nil)
	switch {
	case err != nil:
		// One line, however many errors the file has.
		fmt.Fprintf(tw, "config\t%s: cannot be read: %s\n", path, strings.ReplaceAll(err.Error(), "\n", "; "))
		f, ok = &config.File{}, false
	case f.Path != "":
		fmt.Fprintf(tw, "config\t%s\n", path)
	default:
		fmt.Fprintf(tw, "config\t%s (not found; built-in providers only)\n", path)
	}
	fmt.Fprintf(tw, "data\t%s\n", dirState(dataDir()))
	if line, pgOK := postgresReport(ctx, db); line != "" {
		fmt.Fprintf(tw, "threads\tPostgreSQL %s\n", line)
		ok = ok && pgOK
	}
	if line, redisOK := redisReport(ctx, redis); line != "" {
		fmt.Fprintf(tw, "redis\t%s\n", line)
		ok = ok && redisOK
	}

	fmt.Fprintln(tw, "providers\t")
	list, err := provider.List(provider.Config{File: f})
	if err != nil {
		fmt.Fprintf(tw, "  (cannot list: %v)\t\n", err)
		ok = false
	}
	for _, p := range list {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, keyState(p), baseState(p.BaseURL))
	}

	rep := detectSandbox()
	fmt.Fprintf(tw, "sandbox\t%s\n", rep)
	fmt.Fprintf(tw, "sandbox mode\t%s: %s\n", mode, mode.Describe(rep))
	if ok, why := agent.ExecCase(mode, tool.PolicyOnRequest, rep); ok {
		fmt.Fprintf(tw, "exec	offered by default; %s\n", why)
	} else {
		fmt.Fprintf(tw, "exec	not offered: %s\n", why)
	}
	// The config's [sandbox] table, as run would apply it; defaults when
	// the file cannot be read (said above).
	box := sandboxOptions(f)
	fmt.Fprintf(tw, "limits\t%s\n", describeLimits(newRunner(mode, box), f))
	if deny, err := sandbox.NewDenyList(box.Deny); err != nil {
		fmt.Fprintf(tw, "deny list\t%v\n", err) // config.Parse checks the patterns: not expected
		ok = false
	} else {
		fmt.Fprintf(tw, "deny list\t%s\n", newDenyReport(deny, box.Deny.Allow))
	}
	if rg := fs.Ripgrep(); rg != "" {
		fmt.Fprintf(tw, "ripgrep\t%s (grep uses it)\n", rg)
	} else {
		fmt.Fprintln(tw, "ripgrep\tnot found (grep uses its built-in search, slower on large trees)")
	}
	mcpReport(ctx, tw, f)
	webSearchReport(ctx, tw, f)
	tw.Flush()
	return ok
}

// mcpReport starts the config's MCP servers, as run would, and says for
// each how many tools it lists or why it did not come up. A server that is
// down is reported, not failed on: the commands run without it.
func mcpReport(ctx context.Context, w io.Writer, f *config.File) {
	if len(f.MCP.Servers) == 0 {
		return
	}
	fmt.Fprintln(w, "mcp servers\t")
	m, err := startMCP(ctx, io.Discard, f)
	if err != nil {
		fmt.Fprintf(w, "  (cannot start: %s)\t\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return
	}
	defer m.Close()
	for _, s := range m.Status() {
		trust := "untrusted: its tools ask before they run, unless marked read-only"
		if s.Trusted {
			trust = "trusted"
		}
		if s.Err != nil {
			fmt.Fprintf(w, "  %s\tdown: %s\n", s.Name, strings.ReplaceAll(s.Err.Error(), "\n", "; "))
			continue
		}
		fmt.Fprintf(w, "  %s\t%d tools, %s\n", s.Name, s.Tools, trust)
	}
}

func keyState(p provider.Info) string {
	switch {
	case p.KeyEnv == "":
		return "no key needed"
	case p.KeySet:
		return "key set (" + p.KeyEnv + ")"
	default:
		return "no key: set " + p.KeyEnv
	}
}

// baseState shows where requests go without what a URL may carry of a
// secret: user information and the query are dropped.
func baseState(base string) string {
	if base == "" {
		return "default base URL"
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "base URL set but not a valid URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return "base URL " + u.String()
}

// dataDir is where rein keeps threads and the tools' data:
// $XDG_DATA_HOME/rein, or ~/.local/share/rein.
func dataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "rein")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "share", "rein")
}

func dirState(dir string) string {
	if dir == "" {
		return "unknown (neither XDG_DATA_HOME nor HOME is set)"
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return dir
	case err == nil:
		return dir + " (not a directory)"
	case os.IsNotExist(err):
		return dir + " (not created yet)"
	default:
		return fmt.Sprintf("%s (%v)", dir, err)
	}
}
