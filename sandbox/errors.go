package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrEscape is matched by errors.Is for every path refused because it leads
// outside the workspace.
var ErrEscape = errors.New("path leads outside the workspace")

// Reasons a path escapes, as given in EscapeError.Reason.
const (
	ReasonAbsolute = "is an absolute path outside the workspace"
	ReasonDotDot   = "climbs out of the workspace with .."
	ReasonSymlink  = "goes through a symbolic link that leads outside the workspace"
)

// EscapeError reports a path refused because it leads outside the
// workspace.
type EscapeError struct {
	// Path is the path as the caller gave it.
	Path string
	// Reason is one of the Reason constants.
	Reason string
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%q %s; only files inside the workspace can be used: give a path relative to the workspace root, such as \"src/main.go\"", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrEscape) true.
func (e *EscapeError) Is(target error) bool { return target == ErrEscape }

// rootEscape is the text of the unexported error os.Root returns for a path
// that leaves it; os offers no other way to recognise it. The symlink
// escape tests fail if it changes.
const rootEscape = "path escapes from parent"

// mapErr turns os.Root's escape error into an EscapeError naming the path
// as given. Lexical escapes are caught before os.Root is asked, so what
// os.Root refuses went out through a link.
func mapErr(name string, err error) error {
	if err == nil {
		return nil
	}
	// os.Root nests path errors (mkdirat wraps statat), so look at the
	// innermost cause.
	cause := err
	for u := errors.Unwrap(cause); u != nil; u = errors.Unwrap(cause) {
		cause = u
	}
	if _, ok := cause.(*fs.PathError); !ok && cause.Error() == rootEscape {
		return &EscapeError{Path: name, Reason: ReasonSymlink}
	}
	return err
}
