package fs

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxDiffLines caps the diff edit_file reports; the file holds the truth.
const maxDiffLines = 400

// change says that old lines [oldStart, oldEnd) became new lines
// [newStart, newEnd); indexes count from 0.
type change struct{ oldStart, oldEnd, newStart, newEnd int }

// splitLines splits s after each line end. A last line without one is kept
// as it is; nothing follows a final line end.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// trim shrinks c to the lines that differ.
func (c change) trim(old, new []string) change {
	for c.oldStart < c.oldEnd && c.newStart < c.newEnd && old[c.oldStart] == new[c.newStart] {
		c.oldStart++
		c.newStart++
	}
	for c.oldEnd > c.oldStart && c.newEnd > c.newStart && old[c.oldEnd-1] == new[c.newEnd-1] {
		c.oldEnd--
		c.newEnd--
	}
	return c
}

// unifiedDiff renders the changes, which are in order and do not overlap,
// as a unified diff of the file rel.
func unifiedDiff(rel string, old, new []string, changes []change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", rel, rel)
	lines := 0
	for i := 0; i < len(changes); {
		// A hunk takes every change whose context touches the next one's.
		j := i + 1
		for j < len(changes) && changes[j].oldStart-changes[j-1].oldEnd <= 2*diffContext {
			j++
		}
		first, last := changes[i], changes[j-1]
		os := max(0, first.oldStart-diffContext)
		oe := min(len(old), last.oldEnd+diffContext)
		ns := first.newStart - (first.oldStart - os)
		ne := last.newEnd + (oe - last.oldEnd)
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(os, oe-os), hunkRange(ns, ne-ns))
		at := os
		for _, c := range changes[i:j] {
			lines += writeLines(&b, ' ', old[at:c.oldStart])
			lines += writeLines(&b, '-', old[c.oldStart:c.oldEnd])
			lines += writeLines(&b, '+', new[c.newStart:c.newEnd])
			at = c.oldEnd
		}
		lines += writeLines(&b, ' ', old[at:oe])
		if lines > maxDiffLines {
			fmt.Fprintf(&b, "… (diff cut at %d lines; read_file shows the result)\n", maxDiffLines)
			break
		}
		i = j
	}
	return b.String()
}

// hunkRange formats a hunk's start and length; an empty range names the
// line before it, as diff does.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLines(b *strings.Builder, op byte, lines []string) int {
	for _, l := range lines {
		b.WriteByte(op)
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return len(lines)
}
