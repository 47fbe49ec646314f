package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/tools/kb"
)

// TestEachThreadAttachesItsOwnKnowledgeBases: a thread whose settings name
// a knowledge base gets rag and kb_files and its first message's seed; a
// thread of the same workspace that names none gets neither, though both
// run on one runtime. Before, the bases were the runtime's alone.
func TestEachThreadAttachesItsOwnKnowledgeBases(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	r := scriptedRuntime(t, dir)
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "deleting.md"), []byte("# Deleting\n\nA deleted file goes to the trash for 30 days.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Add(t.Context(), r.c.Store, "docs", []string{docs}, kb.AddOptions{RelativeTo: docs}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.KnowledgeBases(t.Context()); err != nil || !slices.Equal(got, []string{"docs"}) {
		t.Fatalf("KnowledgeBases = %v, %v; want [docs]", got, err)
	}
	run := func(id string, kbs []string) (loop.Options, string) {
		t.Helper()
		th := record.Thread{ID: id, Settings: record.Settings{KBs: kbs}}
		o, release, err := r.Setup(t.Context(), th)
		if err != nil {
			t.Fatal(err)
		}
		if release != nil {
			defer release()
		}
		in := r.Seed(t.Context(), th, o, "turn_1", []llm.Item{llm.UserText("how long does a deleted file stay in the trash")})
		return o, in[0].Text()
	}
	with, seeded := run("thread_kb", []string{"docs"})
	without, plain := run("thread_plain", nil)
	for _, name := range []string{"rag", "kb_files"} {
		if _, ok := with.Tools.Get(name); !ok {
			t.Errorf("the thread attaching docs lacks %s", name)
		}
		if _, ok := without.Tools.Get(name); ok {
			t.Errorf("the thread attaching nothing has %s", name)
		}
	}
	if !strings.Contains(seeded, "deleting.md") {
		t.Errorf("the first message of the thread attaching docs is not seeded from it:\n%s", seeded)
	}
	if plain != "how long does a deleted file stay in the trash" {
		t.Errorf("the first message of the thread attaching nothing changed:\n%s", plain)
	}
}

func TestKBsOfJoinsTheRuntimesAndTheThreads(t *testing.T) {
	r := NewRuntime(RuntimeConfig{Tools: Tools{KBs: []string{"handbook", "docs"}}})
	tests := []struct {
		thread, want []string
	}{
		{nil, []string{"handbook", "docs"}},
		{[]string{"docs", "notes"}, []string{"handbook", "docs", "notes"}},
	}
	for _, tt := range tests {
		if got := r.kbsOf(record.Settings{KBs: tt.thread}); !slices.Equal(got, tt.want) {
			t.Errorf("kbsOf(%v) = %v, want %v", tt.thread, got, tt.want)
		}
	}
	if got := r.kbsOf(record.Settings{KBs: []string{"notes"}}); !slices.Equal(r.c.Tools.KBs, []string{"handbook", "docs"}) {
		t.Errorf("kbsOf changed the runtime's own list (returned %v)", got)
	}
}
