package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/kb"
)

func newKBCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "kb add|list|files|search|rm",
		Short: "Knowledge bases: text files searched with rag when attached to a turn with --kb NAME",
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)

	var maxSize int64
	var embed string
	var exclude []string
	var noGitignore bool
	add := &cobra.Command{
		Use:   "add NAME PATH...",
		Short: "Add text files (directories are walked) to the knowledge base NAME, creating it",
		Long: "add reads the text files at each PATH — directories recursively, leaving out hidden\n" +
			"entries, .git, node_modules, binary files and files over --max-size — cuts them into\n" +
			"chunks with their line ranges and indexes them (SQLite FTS5, BM25). A file added again\n" +
			"is replaced when it changed. Paths in references are relative to the current directory.\n" +
			"What a directory's .gitignore ignores is left out, and what --exclude GLOB matches.\n" +
			"--embed PROVIDER:MODEL also embeds each chunk through the provider's OpenAI-compatible\n" +
			"/v1/embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp), and rag then fuses BM25 with\n" +
			"cosine search; a base embedded once stays embedded: adding to it embeds the new chunks.",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			o := kb.AddOptions{MaxFileSize: maxSize, Exclude: exclude, NoGitignore: noGitignore}
			if embed == "" {
				// A base embedded once stays so: its new chunks get vectors.
				if embed, err = st.KBEmbedding(cmd.Context(), args[0]); err != nil {
					return err
				}
			}
			if embed != "" {
				e, err := kbEmbedders()(embed)
				if err != nil {
					return usageError(fmt.Errorf("--embed %s: %w", embed, err))
				}
				o.Embed, o.EmbedModel = e, embed
			}
			rep, err := kb.Add(cmd.Context(), st, args[0], args[1:], o)
			if errors.Is(err, store.ErrInvalidName) {
				return usageError(err)
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d files read (%d added, %d updated, %d unchanged), %d chunks written, %s in %s\n",
				args[0], rep.Files, rep.Added, rep.Updated, rep.Unchanged, rep.Chunks, bytesText(rep.Bytes), rep.Duration.Round(time.Millisecond))
			if rep.Ignored > 0 {
				fmt.Fprintf(out, "%d files and directories ignored (.gitignore, --exclude)\n", rep.Ignored)
			}
			if embed != "" {
				fmt.Fprintf(out, "%d chunks embedded with %s\n", rep.Embedded, embed)
			}
			if rep.SkippedCount > 0 {
				fmt.Fprintf(out, "%d files left out:\n", rep.SkippedCount)
				for _, s := range rep.Skipped {
					fmt.Fprintf(out, "  %s: %s\n", s.Path, s.Reason)
				}
				if rep.SkippedCount > len(rep.Skipped) {
					fmt.Fprintf(out, "  … and %d more\n", rep.SkippedCount-len(rep.Skipped))
				}
			}
			return nil
		},
	}
	add.Flags().Int64Var(&maxSize, "max-size", kb.DefaultMaxFileSize, "leave out files larger than this many bytes")
	add.Flags().StringVar(&embed, "embed", "", "embed the chunks with PROVIDER:MODEL's /v1/embeddings, for hybrid search (BM25 + cosine)")
	add.Flags().StringArrayVar(&exclude, "exclude", nil, "leave out what GLOB matches (a glob without / matches any name on the path); repeatable")
	add.Flags().BoolVar(&noGitignore, "no-gitignore", false, "add what .gitignore files ignore too")

	list := listCmd("List the knowledge bases: name, files, chunks, size, updated, embedding model", "bases",
		"no knowledge bases; rein kb add NAME PATH... makes one", &db, kbRows,
		func(out io.Writer, kbs []kbRow) error {
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tFILES\tCHUNKS\tSIZE\tUPDATED\tEMBEDDING")
			for _, k := range kbs {
				embedding := k.Embedding
				if embedding == "" {
					embedding = "bm25 only"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", k.Name, k.Files, k.Chunks, bytesText(k.Bytes), k.Updated.Local().Format(time.DateTime), embedding)
			}
			return tw.Flush()
		})

	files := &cobra.Command{
		Use:   "files NAME",
		Short: "List the files of a knowledge base",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			fs, err := st.KBFiles(cmd.Context(), args[0])
			if err != nil {
				return notFound(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, f := range fs {
				fmt.Fprintf(tw, "%s\t%s\t%d chunks\n", f.Path, bytesText(f.Size), f.Chunks)
			}
			return tw.Flush()
		},
	}

	var limit int
	search := &cobra.Command{
		Use:   "search NAME QUERY...",
		Short: "Search a knowledge base as rag does: the best passages with their references",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			ps, _, note, err := kb.Search(cmd.Context(), st, args[0], strings.Join(args[1:], " "), limit, kbEmbedders())
			if errors.Is(err, store.ErrEmptyQuery) {
				return usageError(err)
			}
			if err != nil {
				return notFound(err)
			}
			out := cmd.OutOrStdout()
			if note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+note)
			}
			if len(ps) == 0 {
				fmt.Fprintln(out, "no passage matches")
			}
			for i, p := range ps {
				fmt.Fprintf(out, "[%d] %s  (score %.2f)\n%s\n\n", i+1, p.Ref(), p.Score, indent("  "+p.Text))
			}
			return nil
		},
	}
	search.Flags().IntVar(&limit, "limit", 5, "at most this many passages")

	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove knowledge bases with their files and index",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeEach(cmd, db, args, (*store.Store).DeleteKB)
		},
	}
	cmd.AddCommand(add, list, files, search, rm)
	return cmd
}

// kbEmbedders finds a base's embeddings endpoint as a model is found: the
// environment and the config file (an unreadable file is reported when an
// embedder is asked for).
func kbEmbedders() kb.Embedders {
	f, err := loadConfig()
	if err != nil {
		return func(string) (kb.Embedder, error) { return nil, err }
	}
	return agent.ProviderEmbedders(provider.Config{File: f})
}

// notFound makes a store's not-found error a failure with its message
// (exit 1), and passes other errors on.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &exitError{code: ExitFailed, err: err}
	}
	return err
}

// bytesText writes a size for people: 512 B, 4.2 KiB, 1.3 MiB.
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// kbRow is a knowledge base as kb list shows it: with its embedding model
// ("" for a base searched by BM25 alone).
type kbRow struct {
	store.KB
	Embedding string `json:"embedding"`
}

// kbRows lists the knowledge bases with their embedding models.
func kbRows(st *store.Store, ctx context.Context) ([]kbRow, error) {
	kbs, err := st.KBs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]kbRow, len(kbs))
	for i, k := range kbs {
		out[i].KB = k
		if out[i].Embedding, err = st.KBEmbedding(ctx, k.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
