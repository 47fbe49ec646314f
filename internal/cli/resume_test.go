package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/store"
)

// seedThreads stores threads with the given ids, workspaces and titles in a
// fresh store, in order (the last is the most recent), and returns its path.
func seedThreads(t *testing.T, threads ...record.Thread) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "rein.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, th := range threads {
		if _, err := st.CreateThread(context.Background(), th); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestThreadIDsAreTakenByUniquePrefix(t *testing.T) {
	clearKeys(t)
	ws := t.TempDir()
	db := seedThreads(t,
		record.Thread{ID: "thread_aaa111", Title: "first", Settings: record.Settings{Workspace: ws, Model: "scripted:x"}},
		record.Thread{ID: "thread_aaa222", Title: "second", Settings: record.Settings{Workspace: ws, Model: "scripted:x"}},
		record.Thread{ID: "thread_bbb333", Title: "third", Settings: record.Settings{Workspace: ws, Model: "scripted:x"}})
	ctx := context.Background()

	code, out, stderr := runMain(t, ctx, "sessions", "show", "--db", db, "bbb")
	if code != 0 || !strings.Contains(out, "thread thread_bbb333") {
		t.Errorf("sessions show bbb: exit %d %q %q; want thread_bbb333", code, out, stderr)
	}
	code, _, stderr = runMain(t, ctx, "sessions", "show", "--db", db, "aaa")
	if code != ExitUsage || !strings.Contains(stderr, "thread_aaa111") || !strings.Contains(stderr, "thread_aaa222") {
		t.Errorf("sessions show aaa: exit %d %q; want 2 listing both candidates", code, stderr)
	}
	script := writeScript(t, "rounds:\n  - text: hello again\n")
	code, stdout, stderr := runMain(t, ctx, "run", "--json", "--db", db, "--model", "scripted:"+script, "--thread", "thread_bbb", "hi")
	if code != 0 || outcomeOf(t, stdout)["thread_id"] != "thread_bbb333" {
		t.Errorf("run --thread thread_bbb: exit %d %q; want a turn on thread_bbb333", code, stderr)
	}
	code, _, stderr = runMain(t, ctx, "run", "--db", db, "--model", "scripted:"+script, "--thread", "aaa", "hi")
	if code != ExitUsage || !strings.Contains(stderr, "thread_aaa111") {
		t.Errorf("run --thread aaa: exit %d %q; want 2 listing the candidates", code, stderr)
	}
	if code, _, stderr := runMain(t, ctx, "trace", "--db", db, "bbb", "--html", filepath.Join(t.TempDir(), "t.html")); code != 0 {
		t.Errorf("trace bbb: exit %d %q", code, stderr)
	}
	// rm by an ambiguous prefix removes nothing.
	if code, _, _ := runMain(t, ctx, "sessions", "rm", "--db", db, "aaa"); code == 0 {
		t.Errorf("rm aaa: exit 0; an ambiguous prefix must remove nothing")
	}
	code, out, _ = runMain(t, ctx, "sessions", "list", "--db", db, "--all")
	if code != 0 || !strings.Contains(out, "thread_aaa111") || !strings.Contains(out, "thread_aaa222") {
		t.Errorf("after rm aaa: %q; want both aaa threads kept", out)
	}
}

func TestSessionsListShowsTheWorkspacesThreadsUnlessAll(t *testing.T) {
	clearKeys(t)
	here, there := t.TempDir(), t.TempDir()
	db := seedThreads(t,
		record.Thread{ID: "thread_here1", Title: "in here", Settings: record.Settings{Workspace: here}},
		record.Thread{ID: "thread_there1", Title: "over there", Settings: record.Settings{Workspace: there}})
	ctx := context.Background()
	_, out, _ := runMain(t, ctx, "sessions", "list", "--db", db, "-C", here)
	if !strings.Contains(out, "thread_here1") || strings.Contains(out, "thread_there1") {
		t.Errorf("list -C here: %q; want only thread_here1", out)
	}
	_, out, _ = runMain(t, ctx, "sessions", "list", "--db", db, "-C", here, "--all")
	if !strings.Contains(out, "thread_here1") || !strings.Contains(out, "thread_there1") {
		t.Errorf("list --all: %q; want both", out)
	}
	_, out, _ = runMain(t, ctx, "sessions", "list", "--db", db, "-C", t.TempDir())
	if !strings.Contains(out, "no threads in this workspace") {
		t.Errorf("list in an empty workspace: %q", out)
	}
}

func TestChatContinueAndResumeChooseTheWorkspacesThreads(t *testing.T) {
	clearKeys(t)
	here, there := t.TempDir(), t.TempDir()
	db := seedThreads(t,
		record.Thread{ID: "thread_old", Title: "the old one", Settings: record.Settings{Workspace: here}},
		record.Thread{ID: "thread_new", Title: "fix the parser\nplease", Settings: record.Settings{Workspace: here}},
		record.Thread{ID: "thread_elsewhere", Title: "not here", Settings: record.Settings{Workspace: there}})
	ctx := context.Background()
	var out bytes.Buffer

	c, err := chooseThread(ctx, db, here, false, false, nil, &out)
	if err != nil || c.thread != "thread_new" {
		t.Errorf("--continue: %+v, %v; want thread_new, the workspace's latest", c, err)
	}
	if _, err := chooseThread(ctx, db, t.TempDir(), false, false, nil, &out); err == nil || !strings.Contains(err.Error(), "no thread in") {
		t.Errorf("--continue in a workspace without threads: %v; want a clear error", err)
	}

	// Interactive: the list, then the pick.
	out.Reset()
	c, err = chooseThread(ctx, db, here, true, true, strings.NewReader("x\n2\n"), &out)
	if err != nil || c.thread != "thread_old" {
		t.Errorf("--resume picking 2: %+v, %v; want thread_old\n%s", c, err, out.String())
	}
	list := out.String()
	if !strings.Contains(list, "fix the parser please") || !strings.Contains(list, "just now") || strings.Contains(list, "thread_elsewhere") ||
		!strings.Contains(list, `"x" is not one of 1-2`) {
		t.Errorf("--resume list: %q; want this workspace's threads with first message and age, and the bad pick refused", list)
	}
	if c, err := chooseThread(ctx, db, here, true, true, strings.NewReader("\n"), &out); err != nil || c.thread != "thread_new" {
		t.Errorf("--resume with Enter: %+v, %v; want the latest", c, err)
	}
	if c, err := chooseThread(ctx, db, here, true, true, strings.NewReader(""), &out); err != nil || !c.done || c.thread != "" {
		t.Errorf("--resume at end of input: %+v, %v; want nothing opened", c, err)
	}

	// Without a terminal, rein chat --resume prints the list and opens nothing.
	code, stdout, stderr := runMain(t, ctx, "chat", "--db", db, "-C", here, "--resume")
	if code != 0 || !strings.Contains(stdout, "thread_new") || !strings.Contains(stdout, "thread_old") || !strings.Contains(stdout, "rein chat --thread") {
		t.Errorf("chat --resume without a terminal: exit %d %q %q", code, stdout, stderr)
	}
	if code, _, stderr := runMain(t, ctx, "chat", "--db", db, "--continue", "--thread", "x"); code != ExitUsage || !strings.Contains(stderr, "give one") {
		t.Errorf("--continue with --thread: exit %d %q", code, stderr)
	}
}
