// Package cli is the rein command: cobra commands that wire flags to the
// engine, the providers and the tools. cmd/rein only calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes (DESIGN §13).
const (
	ExitCompleted   = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitPaused      = 3
	ExitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks a usage or configuration error (exit 2).
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// exitCode ends a command with code and no further message.
func exitCode(code int) error { return &exitError{code: code} }

// Main runs the command line args and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return mainIO(ctx, args, nil, stdout, stderr)
}

// mainIO is Main with standard input given (nil: the process's), so tests
// can drive `rein serve --stdio`.
func mainIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(defaultCommand(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitCompleted
	}
	var ee *exitError
	if ctx.Err() != nil && !(errors.As(err, &ee) && ee.code == ExitInterrupted) {
		// Interrupted (Ctrl-C) before or after the turn itself: whatever
		// failed then failed because of it.
		fmt.Fprintln(stderr, "rein: interrupted:", err)
		return ExitInterrupted
	}
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "rein:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, bad arguments.
	fmt.Fprintln(stderr, "rein:", err)
	return ExitUsage
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "rein",
		Short: "An agent harness: a model, tools, and a loop that knows when to stop",
		Long: "rein runs a language model in a loop with tools: it builds the context, offers the tools,\n" +
			"runs the calls the model makes (in parallel where safe), feeds the results back and\n" +
			"knows when to stop. Try `rein demo` to see it work offline; `rein` alone opens the chat.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("rein {{.Version}}\n")
	root.SetFlagErrorFunc(suggestFlag)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newDemoCmd(), newToolsCmd())
	root.AddCommand(newModelsCmd())
	root.AddCommand(newDoctorCmd())
	root.AddCommand(newContextCmd())
	root.AddCommand(newChatCmd())
	root.AddCommand(newSessionsCmd(), newAnswerCmd())
	root.AddCommand(newTraceCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newKBCmd(), newMemoryCmd(), newNotesCmd())
	root.AddCommand(newUndoCmd(), newMCPCmd())
	return root
}
