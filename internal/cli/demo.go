package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/internal/demo"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/provider"
)

func newDemoCmd() *cobra.Command {
	var f turnFlags
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run rein's main job offline: a question about a small workspace, answered with real tools",
		Long: "demo writes a small project into a temporary workspace and asks a question about it.\n" +
			"The agent answers with the real engine and the real file tools: parallel calls in one\n" +
			"round, a second round that depends on the first, then the answer. The model's part is\n" +
			"played by a script unless --model names a real one (which costs tokens), and the demo says\n" +
			"so. It keeps its thread in a temporary store of its own, not yours (--db to choose one).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			dir, err := os.MkdirTemp("", "rein-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			if err := demo.Workspace(dir); err != nil {
				return err
			}
			storeNote := "store: " + f.db
			removeStore := false
			if f.db == "" {
				// Its own store: the demo's thread never joins the user's.
				sdir, err := os.MkdirTemp("", "rein-demo-store-")
				if err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(sdir)
					removeStore = true
				}
				f.db = filepath.Join(sdir, "rein.db")
				storeNote = "store: a temporary one, not yours (" + f.db + ")"
				if !keep {
					storeNote = "store: a temporary one, not yours, removed at the end (--keep keeps it)"
				}
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			s := turnSetup{flags: &f, cfg: cfg, dir: dir, prompt: demo.Question, gone: removeStore}
			switch {
			case f.model == "" || f.model == "scripted":
				// Never a configured or keyed model unless asked: a demo
				// must not spend the user's money.
				s.spec = provider.Spec{Provider: "scripted", Model: "demo"}
				m, perr := scripted.Parse(demo.Script)
				if perr != nil {
					return perr
				}
				s.model = m
				s.header = append(s.header, "rein demo — the model is scripted (--model PROVIDER:MODEL runs a real one, which costs tokens);",
					"the engine, the tools and their results are real.")
			default:
				spec, err := chooseModel(f.model, cfg)
				if err != nil {
					return usageError(err)
				}
				r, err := provider.Resolve(spec, f.providerConfig(cfg, cmd.ErrOrStderr()))
				if err != nil {
					return usageError(err)
				}
				s.spec, s.model, s.caps = spec, r.Model, &r.Caps
				s.header = append(s.header, "rein demo — model "+spec.String()+", as --model asks")
			}
			s.header = append(s.header, "workspace: "+dir, storeNote, "")
			if f.json {
				s.header = nil
			}
			return runTurn(cmd, s)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary workspace")
	cmd.Flags().Lookup("model").Usage = "PROVIDER:MODEL to run the demo on a real model, which costs tokens (default: the demo's script)"
	return cmd
}
