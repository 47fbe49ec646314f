package fs

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// applyPatch applies a unified diff of one file to content. Models write
// diffs loosely, so before go-gitdiff parses it the patch gets file headers
// if it has none and hunk headers whose counts fit their lines; then every
// hunk is placed where its old lines are in the file.
func applyPatch(rel, content, patch string) (*edit, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(normalizePatch(rel, patch)))
	if err != nil {
		return nil, &usageError{msg: "patch is not a unified diff: " + err.Error() + `; send hunks that start with "@@ -LINE,COUNT +LINE,COUNT @@" followed by lines starting with space, - or +`, err: err}
	}
	switch {
	case len(files) == 0:
		return nil, &usageError{msg: `patch has no hunks; each change starts with a line "@@ -LINE,COUNT +LINE,COUNT @@"`}
	case len(files) > 1:
		return nil, &usageError{msg: fmt.Sprintf("patch changes %d files; edit one file per call", len(files))}
	}
	f := files[0]
	switch {
	case f.IsBinary:
		return nil, &usageError{msg: "binary patches are not supported"}
	case f.IsNew || f.IsDelete || f.IsRename || f.IsCopy:
		return nil, &usageError{msg: "patch creates, deletes, renames or copies a file; edit_file only changes an existing file (use write_file to create one)"}
	case len(f.TextFragments) == 0:
		return nil, &usageError{msg: `patch has no hunks; each change starts with a line "@@ -LINE,COUNT +LINE,COUNT @@"`}
	}
	lines := splitLines(content)
	if err := place(f.TextFragments, lines); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, strings.NewReader(content), f); err != nil {
		var ae *gitdiff.ApplyError
		if errors.As(err, &ae) && ae.Fragment > 0 {
			return nil, &usageError{msg: fmt.Sprintf("hunk %d does not apply at line %d: %v", ae.Fragment, ae.Line, err), err: err}
		}
		return nil, &usageError{msg: "patch does not apply: " + err.Error(), err: err}
	}
	result := out.String()
	if result == content {
		return nil, &usageError{msg: "patch changes nothing; its + and - lines are the same"}
	}
	var diff strings.Builder
	fmt.Fprintf(&diff, "--- a/%s\n+++ b/%s\n", rel, rel)
	for _, frag := range f.TextFragments {
		diff.WriteString(frag.String())
	}
	var added, deleted int64
	for _, frag := range f.TextFragments {
		added += frag.LinesAdded
		deleted += frag.LinesDeleted
	}
	return &edit{
		content: result,
		summary: fmt.Sprintf("applied %d hunks (+%d -%d lines)", len(f.TextFragments), added, deleted),
		diff:    diff.String(),
	}, nil
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$`)

// normalizePatch makes a loosely written diff of rel parseable: file headers
// when there are none, a space for context lines left blank, and hunk
// headers counted from the hunk's lines. A header without numbers ("@@ @@")
// starts at line 1 and is placed by its lines.
func normalizePatch(rel, patch string) string {
	lines := strings.Split(strings.ReplaceAll(patch, "\r\n", "\n"), "\n")
	var b strings.Builder
	hasHeader := false
	for _, l := range lines {
		if strings.HasPrefix(l, "@@") {
			break
		}
		if strings.HasPrefix(l, "--- ") {
			hasHeader = true
		}
	}
	if !hasHeader {
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", rel, rel)
	}
	for i := 0; i < len(lines); {
		l := lines[i]
		if !strings.HasPrefix(l, "@@") {
			if l != "" || i < len(lines)-1 {
				b.WriteString(l)
				b.WriteByte('\n')
			}
			i++
			continue
		}
		oldAt, newAt, comment := 1, 1, ""
		if m := hunkHeader.FindStringSubmatch(l); m != nil {
			oldAt, _ = strconv.Atoi(m[1])
			newAt, _ = strconv.Atoi(m[2])
			comment = m[3]
		}
		i++
		var body []string
		for ; i < len(lines) && !endsHunk(lines, i); i++ {
			body = append(body, lines[i])
		}
		// Blank lines at the end are the patch's own line ends, not
		// context; blank lines inside are context whose space was lost.
		for len(body) > 0 && body[len(body)-1] == "" {
			body = body[:len(body)-1]
		}
		oldN, newN := 0, 0
		for k, bl := range body {
			if bl == "" {
				body[k] = " "
				bl = " "
			}
			switch bl[0] {
			case ' ':
				oldN++
				newN++
			case '-':
				oldN++
			case '+':
				newN++
			}
		}
		if oldN > 0 && oldAt == 0 {
			oldAt = 1
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@%s\n", oldAt, oldN, newAt, newN, comment)
		for _, bl := range body {
			b.WriteString(bl)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// endsHunk reports whether lines[i] starts something other than a hunk
// line: the next hunk or the next file.
func endsHunk(lines []string, i int) bool {
	l := lines[i]
	switch {
	case strings.HasPrefix(l, "@@"), strings.HasPrefix(l, "diff "):
		return true
	case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
		return true
	}
	return false
}

// place moves each hunk to where its old lines (context and removals) are
// in the file: where its header says if they are there, else the nearest
// place they are. The new positions follow from the old ones.
func place(frags []*gitdiff.TextFragment, lines []string) error {
	for n, f := range frags {
		var pre []string
		for _, l := range f.Lines {
			if l.Old() {
				pre = append(pre, l.Line)
			}
		}
		if len(pre) == 0 {
			// A hunk that only adds lines has nothing to find; its header
			// decides.
			continue
		}
		want := max(int(f.OldPosition)-1, 0)
		if matchesAt(lines, pre, want) {
			continue
		}
		best, tie := -1, false
		for i := 0; i+len(pre) <= len(lines); i++ {
			if !matchesAt(lines, pre, i) {
				continue
			}
			switch d, bd := abs(i-want), abs(best-want); {
			case best < 0 || d < bd:
				best, tie = i, false
			case d == bd:
				tie = true
			}
		}
		switch {
		case best < 0:
			return &usageError{msg: fmt.Sprintf("hunk %d (%s) does not match the file: its context and - lines were not found; read_file the lines (near line %d) and copy them exactly into the hunk", n+1, strings.TrimSpace(f.Header()), want+1)}
		case tie:
			return &usageError{msg: fmt.Sprintf("hunk %d matches the file in two places equally near line %d; give more context lines or an exact line number", n+1, want+1)}
		}
		f.OldPosition = int64(best + 1)
	}
	// Hunk starts as 0-based line indexes: an empty range in a header
	// names the line before it.
	first := func(pos, n int64) int64 {
		if n == 0 {
			return pos
		}
		return pos - 1
	}
	slices.SortStableFunc(frags, func(a, b *gitdiff.TextFragment) int {
		return cmp.Compare(first(a.OldPosition, a.OldLines), first(b.OldPosition, b.OldLines))
	})
	var delta, prevEnd int64
	for n, f := range frags {
		start := first(f.OldPosition, f.OldLines)
		if n > 0 && start < prevEnd {
			return &usageError{msg: fmt.Sprintf("hunks %d and %d overlap in the file; merge them into one hunk", n, n+1)}
		}
		prevEnd = start + f.OldLines
		f.NewPosition = start + delta + 1
		if f.NewLines == 0 {
			f.NewPosition--
		}
		delta += f.NewLines - f.OldLines
	}
	return nil
}

func matchesAt(lines, pre []string, i int) bool {
	if i < 0 || i+len(pre) > len(lines) {
		return false
	}
	for k, l := range pre {
		if lines[i+k] != l {
			return false
		}
	}
	return true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
