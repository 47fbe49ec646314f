package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tools/kb"
)

// TestRunKBIsTheThreadsOwn: `rein run --kb docs` keeps docs on the thread
// it makes; `rein run --thread` without --kb seeds its turn from docs
// (before, the bases were the command's alone and a continued thread had
// none); a --kb naming other bases is refused, saying what the thread
// keeps.
func TestRunKBIsTheThreadsOwn(t *testing.T) {
	clearKeys(t)
	db := knowledgeDB(t)
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "retry.md"), []byte("# Retries\n\nRate limited requests back off exponentially, three attempts.\n"), 0o644)
	mustRun(t, "kb", "add", "docs", docs)
	mustRun(t, "kb", "add", "other", docs)
	ws := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: the answer\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+script, "--kb", "docs", "--workspace", ws, "hello")
	if code != ExitCompleted {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	thread := outcomeOf(t, stdout)["thread_id"].(string)

	code, _, stderr = runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+script, "--thread", thread, "how do rate limited requests back off?")
	if code != ExitCompleted {
		t.Fatalf("run --thread: exit %d\n%s", code, stderr)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	th, err := st.Thread(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(th.Settings.KBs, []string{"docs"}) {
		t.Errorf("thread settings KBs = %v, want [docs]", th.Settings.KBs)
	}
	items, err := st.Items(context.Background(), thread)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var seeded bool
	for _, it := range items {
		if it.Role == llm.RoleUser && strings.HasPrefix(it.Text(), "how do rate limited requests back off?\n\n"+kb.SeedHeader) {
			seeded = true
		}
	}
	if !seeded {
		t.Error("the continued thread's turn is not seeded from its base docs")
	}

	code, _, stderr = runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+script, "--thread", thread, "--kb", "other", "again")
	if code != ExitUsage || !strings.Contains(stderr, "keeps --kb docs") || !strings.Contains(stderr, "drop --kb") {
		t.Errorf("run --thread --kb other: exit %d, stderr %q; want a usage error saying the thread keeps docs", code, stderr)
	}
}
