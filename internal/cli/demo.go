package cli

import (
	"fmt"
	"os"

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
			"round, a second round that depends on the first, then the answer. With no API key (or\n" +
			"with --model scripted) the model's part is played by a script, and the demo says so.",
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
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			s := turnSetup{flags: &f, cfg: cfg, dir: dir, prompt: demo.Question}
			spec, err := chooseModel(f.model, cfg)
			switch {
			case f.model == "scripted" || (f.model == "" && err != nil):
				s.spec = provider.Spec{Provider: "scripted", Model: "demo"}
				m, perr := scripted.Parse(demo.Script)
				if perr != nil {
					return perr
				}
				s.model = m
				why := "no API key found"
				if f.model != "" {
					why = "--model scripted"
				}
				s.header = append(s.header, fmt.Sprintf("rein demo — the model is scripted (%s; set OPENAI_API_KEY, ANTHROPIC_API_KEY or DEEPSEEK_API_KEY to use a real one);", why),
					"the engine, the tools and their results are real.")
			case err != nil:
				return usageError(err)
			default:
				r, err := provider.Resolve(spec, f.providerConfig(cfg, cmd.ErrOrStderr()))
				if err != nil {
					return usageError(err)
				}
				s.spec, s.model, s.caps = spec, r.Model, &r.Caps
				s.header = append(s.header, "rein demo — model "+spec.String())
			}
			s.header = append(s.header, "workspace: "+dir, "")
			if f.json {
				s.header = nil
			}
			return runTurn(cmd, s)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary workspace")
	cmd.Flags().Lookup("model").Usage = "PROVIDER:MODEL, or scripted for the demo's script (default: a real provider when a key is set, else scripted)"
	return cmd
}
