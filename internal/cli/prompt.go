package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// maxStdinPrompt bounds a prompt read from standard input: a prompt, not a
// data set (a large file goes in with --attach, read a page at a time).
const maxStdinPrompt = 1 << 20

// errEmptyPrompt is the usage error of a prompt with nothing in it.
var errEmptyPrompt = errors.New("the prompt is empty; say what the agent should do")

// promptOf returns the prompt of `rein run`: the arguments joined, or
// standard input when the only argument is "-" or there is none and stdin
// is not a terminal (`echo … | rein run`, as `codex exec -` and `claude
// -p`). A terminal is never read: the user would wait on a prompt they do
// not know is asked for.
func promptOf(args []string, stdin io.Reader) (string, error) {
	fromStdin := len(args) == 1 && args[0] == "-"
	if len(args) > 0 && !fromStdin {
		p := strings.TrimSpace(strings.Join(args, " "))
		if p == "" {
			return "", errEmptyPrompt
		}
		return p, nil
	}
	if readerIsTerminal(stdin) {
		if fromStdin {
			return "", errors.New("rein run -: standard input is a terminal; pipe the prompt in (echo PROMPT | rein run -) or give it as an argument")
		}
		return "", errors.New("no prompt, and standard input is a terminal: give it as an argument (rein run PROMPT) or on standard input (echo PROMPT | rein run -)")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxStdinPrompt+1))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from standard input: %w", err)
	}
	if len(b) > maxStdinPrompt {
		return "", fmt.Errorf("the prompt on standard input is larger than %d KiB; put the text in a file and attach it (--attach FILE) with a short prompt", maxStdinPrompt>>10)
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", errors.New("the prompt on standard input is empty; say what the agent should do (echo PROMPT | rein run -)")
	}
	return p, nil
}

// readerIsTerminal reports whether r is a terminal.
func readerIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
