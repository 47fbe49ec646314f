package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// answerFlags say how a pause is answered.
type answerFlags struct {
	answers       string // JSON object: question id → answer
	approve       bool
	approveThread bool
	deny          bool
}

func newAnswerCmd() *cobra.Command {
	var f turnFlags
	var a answerFlags
	cmd := &cobra.Command{
		Use:   "answer [flags] THREAD [TEXT]",
		Short: "Answer a paused turn and continue it",
		Long: "answer continues the paused turn of THREAD (its latest turn), in this process, even after a\n" +
			"restart: TEXT answers every question, --answers '{\"q1\":\"…\"}' answers them by id, and\n" +
			"--approve, --approve-thread or --deny answer an approval. The thread keeps its workspace,\n" +
			"model, approval policy and sandbox mode; pass the tool flags the turn was run with. Output and exit codes are run's.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return usageError(err)
			}
			ctx := cmd.Context()
			st, err := openStore(ctx, f.db)
			if err != nil {
				return err
			}
			defer st.Close()
			id, err := resolveThread(ctx, st, args[0])
			if err != nil {
				return err
			}
			snap, err := st.Load(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return usageError(fmt.Errorf("no thread %s in %s (rein sessions list shows them)", id, st.Path()))
			}
			if err != nil {
				return err
			}
			raw, err := st.LoadPause(ctx, id)
			if errors.Is(err, loop.ErrNotPaused) {
				return usageError(fmt.Errorf("thread %s has no paused turn to answer", id))
			}
			if err != nil {
				return err
			}
			state, err := loop.ParseState(raw)
			if err != nil {
				return err
			}
			text := ""
			if len(args) == 2 {
				text = args[1]
			}
			ans, err := a.answer(state.Pause, text)
			if err != nil {
				return usageError(err)
			}

			if err := f.adopt(cmd, snap.Thread, true); err != nil {
				return usageError(err)
			}
			cfg, err := loadConfig()
			if err != nil {
				return usageError(err)
			}
			spec, err := chooseModel(f.model, cfg)
			if err != nil {
				return usageError(err)
			}
			// Resolved, not only opened: the price keeps --max-cost and the
			// context window guards the resumed turn as it did the run.
			r, err := provider.Resolve(spec, f.providerConfig(cfg, cmd.ErrOrStderr()))
			if err != nil {
				return usageError(err)
			}
			dir, err := f.workspaceDir()
			if err != nil {
				return usageError(err)
			}
			return runTurn(cmd, turnSetup{flags: &f, cfg: cfg, spec: spec, model: r.Model, caps: &r.Caps, dir: dir, prompt: describeAnswer(ans), thread: snap.Thread.ID, answer: &ans, st: st,
				// A turn run with --schema asks for the same answer
				// resumed: its JSON alone on stdout, as run prints it.
				output: state.Output})
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&a.answers, "answers", "", `answers by question id, as JSON: '{"q1":"…","q2":"…"}'`)
	fl.BoolVar(&a.approve, "approve", false, "approve the call waiting for approval, this once")
	fl.BoolVar(&a.approveThread, "approve-thread", false, "approve the call and the tool for the rest of the thread")
	fl.BoolVar(&a.deny, "deny", false, "deny the call waiting for approval (TEXT says why)")
	return cmd
}

// answer builds the answer to p from the flags and TEXT, keyed by the
// paused turn and call; it says what is missing or does not fit.
func (a *answerFlags) answer(p *loop.Pause, text string) (loop.Answer, error) {
	ans := loop.Answer{TurnID: p.TurnID, CallID: p.CallID, Text: text}
	n := 0
	for _, on := range []bool{a.approve, a.approveThread, a.deny} {
		if on {
			n++
		}
	}
	if n > 1 {
		return ans, errors.New("give one of --approve, --approve-thread and --deny")
	}
	if p.Kind == tool.PauseApproval {
		switch {
		case a.approve:
			ans.Decision = loop.Approve
		case a.approveThread:
			ans.Decision = loop.ApproveThread
		case a.deny:
			ans.Decision = loop.Deny
		default:
			return ans, fmt.Errorf("call %s waits for approval to run %s %s: answer with --approve, --approve-thread or --deny", p.CallID, p.Tool, p.Args)
		}
		if a.answers != "" {
			return ans, errors.New("--answers answers questions; this pause is an approval")
		}
		return ans, nil
	}
	if n > 0 {
		return ans, fmt.Errorf("call %s asks questions, not an approval: answer with TEXT or --answers", p.CallID)
	}
	if a.answers != "" {
		if text != "" {
			return ans, errors.New("give TEXT or --answers, not both")
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(a.answers), &m); err != nil {
			return ans, fmt.Errorf("--answers: %w; write a JSON object such as '{\"q1\":\"yes\"}'", err)
		}
		// In the order the questions were asked.
		for _, q := range p.Questions {
			if v, ok := m[q.ID]; ok {
				ans.Answers = append(ans.Answers, loop.QuestionAnswer{QuestionID: q.ID, Text: v})
				delete(m, q.ID)
			}
		}
		for id := range m {
			return ans, fmt.Errorf("--answers: no question %q; the questions are %s", id, questionIDs(p))
		}
		return ans, nil
	}
	if strings.TrimSpace(text) == "" {
		return ans, fmt.Errorf("call %s asks %s: answer with TEXT or --answers", p.CallID, questionIDs(p))
	}
	return ans, nil
}

func questionIDs(p *loop.Pause) string {
	var ids []string
	for _, q := range p.Questions {
		ids = append(ids, fmt.Sprintf("%s (%s)", q.ID, shorten(q.Prompt, 60)))
	}
	return strings.Join(ids, ", ")
}

// describeAnswer is the line shown where run shows the prompt.
func describeAnswer(a loop.Answer) string {
	switch {
	case a.Decision != "":
		return "answer: " + string(a.Decision)
	case len(a.Answers) > 0:
		var parts []string
		for _, qa := range a.Answers {
			parts = append(parts, qa.QuestionID+"="+qa.Text)
		}
		return "answer: " + strings.Join(parts, ", ")
	}
	return "answer: " + a.Text
}
