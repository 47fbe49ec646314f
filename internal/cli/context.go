package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/store"
)

func newContextCmd() *cobra.Command {
	var (
		db, history, model string
		asJSON             bool
	)
	cmd := &cobra.Command{
		Use:   "context [THREAD]",
		Short: "Show a thread's context budget by segment",
		Long: "context counts what the next request of a thread would send — the history from its latest\n" +
			"compaction on, earlier turns' directives left out — and shows the budget by segment against\n" +
			"the model's context window: system, instructions, memory, knowledge, skills, tools, history,\n" +
			"tool results, the room kept for the answer, and what is free. Counts are tokenizer estimates\n" +
			"(marked ~ when the window or the tokenizer is a guess for the model).\n\n" +
			"THREAD is a thread in the store: its system prompt and tool definitions are counted as its last\n" +
			"request sent them (the context report kept in its trace), its history as it stands. --history\n" +
			"FILE counts a JSON file instead: an array of items, or {\"system\": \"…\", \"tools\": [...],\n" +
			"\"items\": [...]}.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (history != "") {
				return usageError(errors.New("give one of THREAD and --history FILE"))
			}
			req := &llm.Request{}
			var sent *event.ContextReport
			var err error
			if history != "" {
				req, err = readHistory(history)
			} else {
				req.Items, sent, model, err = threadContext(cmd.Context(), db, args[0], model)
			}
			if err != nil {
				return err
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			spec, err := chooseModel(model, cfg)
			if err != nil {
				return usageError(err)
			}
			w, err := agent.Window(spec, capabilitiesOf(spec, cfg))
			if err != nil {
				return usageError(err)
			}
			req.Model = spec.Model
			r := w.ReportSent(req, sent)
			r.Model = spec.String()
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			printContext(out, r, len(req.Items))
			if history == "" && sent == nil {
				fmt.Fprintln(out, "the thread's trace holds no context report (its turns ran without a context window), so its system prompt and tools are not counted")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.Flags().StringVar(&history, "history", "", "count the items of a JSON file instead of a stored thread")
	cmd.Flags().StringVarP(&model, "model", "m", "", "the model whose window to count against, as PROVIDER:MODEL (default: the thread's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// capabilitiesOf returns what is known of a model without opening it (no
// key needed): its row in the provider's list by the config file f, else
// the defaults, every value a guess.
func capabilitiesOf(spec provider.Spec, f *config.File) provider.Capabilities {
	guess := provider.Capabilities{ContextWindow: 128_000, MaxOutput: 8_192, Estimated: []string{"context_window", "max_output"}, Source: "default"}
	list, err := provider.List(provider.Config{File: f})
	if err != nil {
		return guess
	}
	best := -1
	var caps provider.Capabilities
	for _, p := range list {
		if p.Name != spec.Provider {
			continue
		}
		for _, m := range p.Models {
			// The longest listed name the model is, or is a dated variant of.
			if (spec.Model == m.Name || strings.HasPrefix(spec.Model, m.Name+"-")) && len(m.Name) > best {
				best, caps = len(m.Name), m.Caps
			}
		}
	}
	if best < 0 || caps.ContextWindow <= 0 {
		return guess
	}
	return caps
}

// threadContext loads a stored thread's items as its next turn would send
// them, the context report of its last request (nil when its trace holds
// none), and its model unless one was given.
func threadContext(ctx context.Context, db, id, model string) ([]llm.Item, *event.ContextReport, string, error) {
	st, err := openStore(ctx, db)
	if err != nil {
		return nil, nil, "", err
	}
	defer st.Close()
	if id, err = resolveThread(ctx, st, id); err != nil {
		return nil, nil, "", err
	}
	t, err := st.Thread(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, "", usageError(fmt.Errorf("no thread %s in %s (rein sessions list shows them)", id, st.Path()))
	}
	if err != nil {
		return nil, nil, "", err
	}
	items, err := st.Items(ctx, id)
	if err != nil {
		return nil, nil, "", err
	}
	trace, err := st.Trace(ctx, id)
	if err != nil {
		return nil, nil, "", err
	}
	if model == "" {
		model = t.Settings.Model
	}
	return loop.ContextOf(items), lastContext(trace), model, nil
}

// lastContext returns the context report of the last request in a
// thread's trace: what its system prompt and tools cost when sent.
func lastContext(trace []json.RawMessage) *event.ContextReport {
	for i := len(trace) - 1; i >= 0; i-- {
		if !bytes.Contains(trace[i], []byte(`"context"`)) {
			continue // most events are not; skip decoding them
		}
		var e event.Event
		if json.Unmarshal(trace[i], &e) == nil && e.Type == event.Context && e.Context != nil {
			return e.Context
		}
	}
	return nil
}

// readHistory reads a request to count from a JSON file: an array of
// items, or an object with system, tools and items.
func readHistory(path string) (*llm.Request, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError(err)
	}
	req := &llm.Request{}
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		err = json.Unmarshal(b, &req.Items)
	} else {
		var f struct {
			System string         `json:"system"`
			Tools  []llm.ToolSpec `json:"tools"`
			Items  []llm.Item     `json:"items"`
		}
		err = json.Unmarshal(b, &f)
		req.System, req.Tools, req.Items = f.System, f.Tools, f.Items
	}
	if err != nil {
		return nil, usageError(fmt.Errorf("%s: %w (want an array of items, or {\"system\", \"tools\", \"items\"})", path, err))
	}
	req.Items = loop.ContextOf(req.Items)
	return req, nil
}

// printContext writes the human report: one line per segment.
func printContext(w io.Writer, r *event.ContextReport, items int) {
	approx := ""
	if r.Estimated {
		approx = "~"
	}
	win := fmt.Sprintf("%s tokens", thousands(r.Window))
	if r.WindowEstimated {
		win += " (estimated)"
	}
	fmt.Fprintf(w, "model %s, window %s, counted with %s, %d items\n\n", r.Model, win, r.Counter, items)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SEGMENT\t%12s\t%7s\n", "TOKENS", "SHARE")
	for _, s := range r.Segments {
		fmt.Fprintf(tw, "%s\t%12s\t%5.1f %%\n", s.Name, approx+thousands(s.Tokens), 100*float64(s.Tokens)/float64(r.Total))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nused %s%s of %s (%.1f %%): %s input + %s kept for the answer\n", approx, thousands(r.Used), thousands(r.Window), r.Percent, thousands(r.Input), thousands(r.Reserve))
	if r.Percent > 90 {
		fmt.Fprintln(w, "over 90 %: the next turn shortens old tool results or compacts the history first")
	}
}
