package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinhq/rein/config"
)

// rootOnly are the flags the root command answers itself; any other
// command line that starts with a flag is the chat's.
var rootOnly = map[string]bool{"-h": true, "--help": true, "-v": true, "--version": true}

// defaultCommand returns args with "chat" in front when they name no
// command: bare `rein` opens the chat, and `rein -m gpt-5` opens it on
// that model, as `codex` and `claude` do.
func defaultCommand(args []string) []string {
	if len(args) == 0 {
		return []string{"chat"}
	}
	if a := args[0]; strings.HasPrefix(a, "-") && !rootOnly[a] {
		return append([]string{"chat"}, args...)
	}
	return args
}

// suggestFlag adds "did you mean --X?" to an unknown flag's error when one
// of the command's flags is close to it (cobra suggests commands only).
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var known []string
	add := func(f *pflag.Flag) { known = append(known, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	if c, ok := config.Closest(name, known); ok {
		return fmt.Errorf("%w (did you mean --%s?)", err, c)
	}
	return err
}
