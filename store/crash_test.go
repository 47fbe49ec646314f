package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// TestMain lets the crash test re-execute the test binary as the process
// it kills.
func TestMain(m *testing.M) {
	if os.Getenv("REIN_STORE_CRASH_CHILD") == "1" {
		crashChild(os.Getenv("REIN_STORE_DB"), os.Getenv("REIN_STORE_THREAD"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// reportingJournal records through the store and, once an item is
// committed, reports its id on stdout, one write per line so a kill never
// leaves half a line.
type reportingJournal struct{ s *Store }

func (j reportingJournal) Record(ctx context.Context, threadID string, it llm.Item) error {
	if err := j.s.Record(ctx, threadID, it); err != nil {
		return err
	}
	os.Stdout.WriteString("committed " + it.ID + "\n")
	return nil
}

// slowTool sleeps for its ms argument, so kills land mid-tool.
type slowTool struct{}

func (slowTool) Spec() tool.Spec {
	return tool.Spec{Name: "slow", Access: tool.ReadOnly}
}

func (slowTool) Run(ctx context.Context, c tool.Call) (tool.Output, error) {
	var in struct{ MS int }
	json.Unmarshal(c.Args, &in)
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
		return tool.Output{Text: fmt.Sprintf("slept %dms", in.MS)}, nil
	case <-ctx.Done():
		return tool.Output{}, ctx.Err()
	}
}

// crashChild runs turns on the thread until it is killed: each turn streams
// a narration round in small delayed chunks, runs two slow calls, then
// streams the answer.
func crashChild(db, thread string) {
	ctx := context.Background()
	s, err := Open(ctx, db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	snap, err := s.Load(ctx, thread)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Stdout.WriteString("ready\n")
	history := snap.Items
	for {
		p := loop.NewID("c")
		m, err := scripted.Parse(fmt.Appendf(nil, `
chunk: 4
delay: 2ms
rounds:
  - text: looking at the two things now
    calls:
      - {id: %[1]s_a, name: slow, args: {ms: 20}}
      - {id: %[1]s_b, name: slow, args: {ms: 35}}
  - text: both are fine, nothing else to do
`, p))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		eng, err := loop.New(loop.Options{Model: m, Tools: tool.NewSet(slowTool{}), Journal: reportingJournal{s}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		turn, err := s.startTurn(ctx, thread, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out, err := eng.Run(ctx, loop.Turn{ThreadID: thread, ID: turn.ID, History: history, Input: []llm.Item{llm.UserText("check the two things")}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := s.finishOutcome(ctx, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		history = append(history, out.Items...)
	}
}

// A process running turns is killed with SIGKILL at seeded random points,
// 50 times. After each kill the thread opens, normalization closes the cut
// turn, the history invariants hold, and every item the process reported
// committed is there.
func TestCrashAtRandomPointsLosesNothingCommitted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	const kills = 50
	seed := uint64(5)
	if v := os.Getenv("REIN_CRASH_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (REIN_CRASH_SEED=%d repeats this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "rein.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	thread := newThread(t, s)

	committed := make(map[string]bool)
	cutTurns := 0
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "REIN_STORE_CRASH_CHILD=1", "REIN_STORE_DB="+db, "REIN_STORE_THREAD="+thread)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Wait until the child has opened the thread, then let it run
		// for a random while: mid-stream, mid-tool, between turns.
		if l, ok := <-lines; !ok || l != "ready" {
			cmd.Wait()
			t.Fatalf("kill %d: child did not start: %q %s", i, l, stderr.String())
		}
		timer := time.After(time.Duration(rng.IntN(150)) * time.Millisecond)
		var got []string
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				got = append(got, l)
			case <-timer:
				cmd.Process.Signal(syscall.SIGKILL)
				timer = nil
			}
		}
		// Reaped, so the child's pid no longer exists for normalization.
		cmd.Wait()
		if !strings.Contains(cmd.ProcessState.String(), "killed") {
			t.Fatalf("kill %d: child ended by itself: %s\n%s", i, cmd.ProcessState, stderr.String())
		}
		for _, l := range got {
			if id, ok := strings.CutPrefix(l, "committed "); ok {
				committed[id] = true
			}
		}

		snap, err := s.Load(ctx, thread)
		if err != nil {
			t.Fatalf("kill %d: load: %v", i, err)
		}
		if err := llm.CheckHistory(snap.Items); err != nil {
			t.Fatalf("kill %d: history after the restart: %v", i, err)
		}
		have := make(map[string]bool, len(snap.Items))
		for _, it := range snap.Items {
			have[it.ID] = true
		}
		for id := range committed {
			if !have[id] {
				t.Fatalf("kill %d: item %s was reported committed and is gone", i, id)
			}
		}
		for _, tn := range snap.Turns {
			if tn.Status == StatusRunning {
				t.Fatalf("kill %d: turn %s still running after the restart", i, tn.ID)
			}
		}
		if last := snap.Last(); last != nil && last.Status == loop.StatusInterrupted {
			cutTurns++
		}
	}
	snap, _ := s.Load(ctx, thread)
	t.Logf("%d kills: %d turns (%d cut), %d items, %d reported committed", kills, len(snap.Turns), cutTurns, len(snap.Items), len(committed))
	if cutTurns == 0 {
		t.Fatal("no kill landed inside a turn; the test did not test anything")
	}
}
