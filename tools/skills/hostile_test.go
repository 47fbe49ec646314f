package skills

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestARepositorysSkillThatNeverEndsIsLeftOut: WORKSPACE/.rein/skills comes
// with the repository. A SKILL.md that is a link to /dev/zero (size 0, so
// the size check passed, then read forever) or a FIFO (opening it waits for
// a writer) is a broken skill, listed in Problems; the other skills load.
func TestARepositorysSkillThatNeverEndsIsLeftOut(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good", FileName), "---\nname: good\ndescription: works\n---\nbody\n")
	for _, name := range []string{"zero", "fifo"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero", FileName)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo", FileName), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   *Catalog
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Load([]string{dir})
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.c.Skills) != 1 || r.c.Skills[0].Name != "good" {
			t.Errorf("skills %+v, want good alone", r.c.Skills)
		}
		if p := strings.Join(r.c.Problems, "\n"); !strings.Contains(p, "zero") || !strings.Contains(p, "fifo") {
			t.Errorf("problems %q, want the link to /dev/zero and the FIFO", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading the skills did not end within 10 s")
	}
}

// TestReadSkillRefusesAFIFO: a FIFO beside a repository's SKILL.md would
// hold read_skill (and the turn) until a writer came.
func TestReadSkillRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "s", FileName), "---\nname: s\ndescription: d\n---\nbody\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "s", "ref.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		out, _ := read(c, readInput{Name: "s", File: "ref.md"})
		done <- out.Text
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "not a regular file") {
			t.Errorf("read_skill of a FIFO: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_skill of a FIFO did not end within 10 s")
	}
}
