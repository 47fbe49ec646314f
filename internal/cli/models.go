package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
)

func newModelsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the configured and built-in providers and their models' capabilities",
		Long: "models lists every provider rein knows — built in, and named in the config file\n" +
			"($XDG_CONFIG_HOME/rein/config.toml or ~/.config/rein/config.toml) — with the models it knows\n" +
			"for each: context window, output limit, tool support, reasoning replay and price per\n" +
			"million tokens. Values marked ~ are estimated. Use a model as --model PROVIDER:MODEL.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := config.LoadDefault(nil)
			if err != nil {
				return usageError(fmt.Errorf("config: %w", err))
			}
			list, err := provider.List(provider.Config{File: f})
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Config    string          `json:"config"`
					Providers []provider.Info `json:"providers"`
				}{config.Path(nil), list})
			}
			printModels(out, config.Path(nil), f.Path != "", list)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// printModels writes the human listing: one block per provider.
func printModels(w io.Writer, path string, found bool, list []provider.Info) {
	state := "not found"
	if found {
		state = "read"
	}
	fmt.Fprintf(w, "config: %s (%s)\n", path, state)
	for _, p := range list {
		fmt.Fprintf(w, "\n%s — %s, %s", p.Name, p.Source, protocolName(p.Protocol))
		if p.BaseURL != "" {
			fmt.Fprintf(w, ", %s", p.BaseURL)
		}
		switch {
		case p.KeyEnv == "":
			fmt.Fprint(w, ", no key")
		case p.KeySet:
			fmt.Fprintf(w, ", %s set", p.KeyEnv)
		default:
			fmt.Fprintf(w, ", %s not set", p.KeyEnv)
		}
		fmt.Fprintf(w, ", tools %s\n", p.ToolMode)
		if len(p.Models) == 0 {
			fmt.Fprintf(w, "  any model the server has, as %s:MODEL\n", p.Name)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  MODEL\tCONTEXT\tMAX OUT\tTOOLS\tPARALLEL\tREASONING\t$/M IN\t$/M OUT\t$/M CACHED")
		for _, m := range p.Models {
			c := m.Caps
			est := func(field, s string) string {
				if c.IsEstimated(field) {
					return "~" + s
				}
				return s
			}
			tools := "text"
			if c.NativeTools {
				tools = "native"
			}
			in, out, cached := "?", "?", "?"
			if c.Price != nil {
				in, out = money(c.Price.InputPerM), money(c.Price.OutputPerM)
				cached = in
				if c.Price.CachedPerM > 0 {
					cached = money(c.Price.CachedPerM)
				}
				in, out, cached = est("price", in), est("price", out), est("price", cached)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name,
				est("context_window", thousands(c.ContextWindow)), est("max_output", thousands(c.MaxOutput)),
				est("native_tools", tools), est("parallel_calls", yesNo(c.ParallelCalls)),
				est("reasoning_replay", string(c.ReasoningReplay)), in, out, cached)
		}
		tw.Flush()
		for _, m := range p.Models {
			if m.Request != nil {
				fmt.Fprintf(w, "  %s: %s\n", m.Name, requestSettings(m.Request))
			}
		}
	}
	fmt.Fprintln(w, "\n~ estimated (a guess: override it in the config file).  ? unknown.")
}

// requestSettings lists the config file's request settings as key = value,
// in key order. Header values are left out: they often hold credentials.
func requestSettings(q *config.Request) string {
	var fields map[string]json.RawMessage
	b, _ := json.Marshal(q)
	json.Unmarshal(b, &fields)
	keys := slices.Sorted(maps.Keys(fields))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := string(fields[k])
		if k == "headers" {
			v = strings.Join(slices.Sorted(maps.Keys(q.Headers)), ", ")
		}
		parts = append(parts, k+" = "+v)
	}
	return strings.Join(parts, "; ")
}

func protocolName(p string) string {
	switch p {
	case "openai":
		return "Responses API"
	case "openai-chat":
		return "Chat Completions"
	case "anthropic":
		return "Anthropic Messages"
	}
	return p
}

func money(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// thousands writes n with comma separators: 1047576 → 1,047,576.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
