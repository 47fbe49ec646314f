package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/internal/servicetest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/pgstore"
)

// rein serve --db postgres://… keeps its threads in PostgreSQL: a turn run
// through it is there, with its items, for any node to read.
func TestServeKeepsThreadsInPostgres(t *testing.T) {
	clearKeys(t)
	url := servicetest.Postgres(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the tools' data
	script := writeScript(t, "rounds:\n  - text: stored in postgres\n")
	var errb strings.Builder
	c, in, done := startServeStdioErr(t, &errb, "--model", "scripted:"+script, "--db", url, "--workspace", dir)
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "test"}})
	th := c.call("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)
	c.call("turn/start", map[string]any{"threadId": th["id"], "input": []map[string]any{{"type": "text", "text": "keep this"}}})
	end := c.wait(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	if got := end["params"].(map[string]any)["turn"].(map[string]any); got["status"] != "completed" {
		t.Errorf("turn/completed %v", got)
	}
	in.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after its input closed")
	}
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.LoadThread(context.Background(), th["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Turns) != 1 || snap.Turns[0].Status != session.TurnCompleted || snap.Thread.Title != "keep this" {
		t.Errorf("stored thread %+v, turns %+v", snap.Thread, snap.Turns)
	}
	if n := len(snap.Items); n < 2 || snap.Items[n-1].Text() != "stored in postgres" {
		t.Errorf("stored items %+v", snap.Items)
	}
	// Its trace is there too, for rein trace --db postgres://….
	evs, err := storedEvents(context.Background(), url, th["id"].(string))
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Type != event.TurnCompleted {
		t.Errorf("the stored trace: %d events, %v", len(evs), err)
	}
}

// rein doctor checks the PostgreSQL thread store: it answers and has this
// rein's schema, or it fails saying what is wrong.
func TestDoctorChecksPostgres(t *testing.T) {
	clearKeys(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	url := servicetest.Postgres(t)
	t.Setenv("REIN_DB", url)
	code, stdout, _ := runMain(t, context.Background(), "doctor")
	if line := doctorLine(stdout, "threads"); code != ExitCompleted || !strings.Contains(line, "no rein schema yet") {
		t.Errorf("exit %d, threads line %q on a fresh database:\n%s", code, line, stdout)
	}
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, stdout, _ = runMain(t, context.Background(), "doctor")
	if line := doctorLine(stdout, "threads"); code != ExitCompleted || !strings.Contains(line, fmt.Sprintf("schema version %d", pgstore.SchemaVersion)) {
		t.Errorf("exit %d, threads line %q once migrated:\n%s", code, line, stdout)
	}
	code, stdout, _ = runMain(t, context.Background(), "doctor", "--db", "postgres://rein:secret-pw@127.0.0.1:1/none?connect_timeout=5")
	if line := doctorLine(stdout, "threads"); code != ExitFailed || !strings.Contains(line, "cannot connect") {
		t.Errorf("exit %d, threads line %q for a database that does not answer:\n%s", code, line, stdout)
	}
	if strings.Contains(stdout, "secret-pw") {
		t.Errorf("doctor printed the database password:\n%s", stdout)
	}
	addr, _ := servicetest.Redis(t)
	code, stdout, _ = runMain(t, context.Background(), "doctor", "--redis", addr)
	if line := doctorLine(stdout, "redis"); code != ExitCompleted || !strings.Contains(line, "answers") {
		t.Errorf("exit %d, redis line %q:\n%s", code, line, stdout)
	}
	code, stdout, _ = runMain(t, context.Background(), "doctor", "--redis", "127.0.0.1:1")
	if line := doctorLine(stdout, "redis"); code != ExitFailed || !strings.Contains(line, "does not answer") {
		t.Errorf("exit %d, redis line %q for a Redis that does not answer:\n%s", code, line, stdout)
	}
}

// --redis relays events between servers sharing a PostgreSQL store; with
// threads in a file it is refused, saying what it needs.
func TestServeRefusesRedisWithoutPostgres(t *testing.T) {
	_, err := openRelay(context.Background(), "127.0.0.1:6379", nil)
	if err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Errorf("openRelay without PostgreSQL: %v", err)
	}
}

// A command that keeps threads in a file refuses a PostgreSQL URL rather
// than making a file of it.
func TestFileCommandsRefusePostgres(t *testing.T) {
	t.Setenv("REIN_DB", "postgres://rein:secret-pw@127.0.0.1:1/none")
	_, err := openStore(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "--db FILE") || strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("openStore with REIN_DB a PostgreSQL URL: %v", err)
	}
}
