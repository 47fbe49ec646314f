package security

// Two writers and a full disk (issue 11 §4): two processes on one database
// never run two turns of a thread at once, and a write that fails is an
// error the client sees, never a silently changed status.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

// storeSlowScript answers after holding the stream open, so a second
// process has time to try the thread while the turn runs.
const storeSlowScript = `rounds:
  - text: first done
    hold: 2500ms
`

// storeEnv is an environment without provider keys, with a home, config
// and data directory of its own.
func storeEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") || k == "REIN_DB" ||
			k == "HOME" || k == "XDG_CONFIG_HOME" || k == "XDG_DATA_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
}

func storeWrite(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// storeServer is a `rein serve --stdio` process and a JSON-RPC client of
// it.
type storeServer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	// backlog holds the messages read while waiting for something else.
	backlog []map[string]any
	next    int
	stderr  *storeBuffer
	done    chan error
}

// storeBuffer is a bytes.Buffer safe to read while the process writes it.
type storeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *storeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *storeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func storeServe(t *testing.T, bin string, env []string, args ...string) *storeServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--stdio"}, args...)...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &storeServer{t: t, cmd: cmd, in: in, lines: make(chan map[string]any, 1024), stderr: &storeBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.lines <- m
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { s.stop() })
	s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "security"}})
	return s
}

// stop closes the server's input and waits for it to exit (killing it
// after 15 s).
func (s *storeServer) stop() error {
	if s.in == nil {
		return nil
	}
	s.in.Close()
	s.in = nil
	select {
	case err := <-s.done:
		return err
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return errors.New("rein serve did not exit within 15s of its input closing")
	}
}

// call sends a request and returns its result, or its error object.
func (s *storeServer) call(method string, params any) (result, rpcErr map[string]any) {
	s.t.Helper()
	s.next++
	id := float64(s.next)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("%s: %v (stderr: %s)", method, err, s.stderr)
	}
	m := s.take(func(m map[string]any) bool { return m["id"] == id }, 30*time.Second)
	if e, ok := m["error"].(map[string]any); ok {
		return nil, e
	}
	r, _ := m["result"].(map[string]any)
	return r, nil
}

// must is call for a request that must succeed.
func (s *storeServer) must(method string, params any) map[string]any {
	s.t.Helper()
	r, e := s.call(method, params)
	if e != nil {
		s.t.Fatalf("%s: %v", method, e)
	}
	return r
}

// note waits for a notification of method about turnID ("" for any) and
// returns its turn.
func (s *storeServer) note(method, turnID string) map[string]any {
	s.t.Helper()
	m := s.take(func(m map[string]any) bool {
		if m["method"] != method {
			return false
		}
		tu, _ := m["params"].(map[string]any)["turn"].(map[string]any)
		return turnID == "" || (tu != nil && tu["id"] == turnID)
	}, 30*time.Second)
	tu, _ := m["params"].(map[string]any)["turn"].(map[string]any)
	return tu
}

// take returns the first message (backlog first) that matches.
func (s *storeServer) take(match func(map[string]any) bool, within time.Duration) map[string]any {
	s.t.Helper()
	for i, m := range s.backlog {
		if match(m) {
			s.backlog = append(s.backlog[:i], s.backlog[i+1:]...)
			return m
		}
	}
	timeout := time.After(within)
	for {
		select {
		case m, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("rein serve closed its output (stderr: %s)", s.stderr)
			}
			if match(m) {
				return m
			}
			s.backlog = append(s.backlog, m)
		case <-timeout:
			s.t.Fatalf("no matching message within %v (stderr: %s)", within, s.stderr)
		}
	}
}

// storeRein runs a rein command to its end and returns its exit code,
// stdout and stderr.
func storeRein(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("rein %s: %v", strings.Join(args, " "), err)
	return 0, "", ""
}

// storeShow reads a thread through `rein sessions show --json`, a process
// of its own, and checks its history against rein's invariants.
// storeExport is what rein sessions show --json prints: the thread's
// turns as the protocol has them, in snake_case, and its items as stored.
type storeExport struct {
	Turns []storeTurn `json:"turns"`
	Items []llm.Item  `json:"items"`
}

// storeTurn is a turn of storeExport.
type storeTurn struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error"`
}

// Last is the thread's latest turn, nil when it has none.
func (e *storeExport) Last() *storeTurn {
	if len(e.Turns) == 0 {
		return nil
	}
	return &e.Turns[len(e.Turns)-1]
}

func storeShow(t *testing.T, bin string, env []string, db, thread string) *storeExport {
	t.Helper()
	code, out, errs := storeRein(t, bin, env, "sessions", "show", "--json", "--db", db, thread)
	if code != 0 {
		t.Fatalf("rein sessions show exited %d: %s", code, errs)
	}
	var snap storeExport
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("rein sessions show --json: %v\n%s", err, out)
	}
	if err := llm.CheckHistory(snap.Items); err != nil {
		t.Errorf("thread %s breaks the history invariants: %v", thread, err)
	}
	return &snap
}

// storeNoText fails when any item of snap holds text.
func storeNoText(t *testing.T, snap *storeExport, text string) {
	t.Helper()
	for _, it := range snap.Items {
		if strings.Contains(it.Text(), text) {
			t.Errorf("refused input reached the history: %s %q", it.ID, it.Text())
		}
	}
}

// Two `rein serve --stdio` on one --db: while the first runs a turn of a
// thread, the second's turn/start is refused with an error naming that
// turn and its process; once it ends the second goes on, from the stored
// history.
func TestStoreTwoServersOneThread(t *testing.T) {
	bin := reinBinary(t)
	env := storeEnv(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	script := storeWrite(t, dir, "slow.yaml", storeSlowScript)
	args := []string{"--db", db, "--model", "scripted:" + script, "--workspace", dir}
	a := storeServe(t, bin, env, args...)
	b := storeServe(t, bin, env, args...)

	th := a.must("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)["id"].(string)
	first := a.must("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "first"}}})["turn"].(map[string]any)["id"].(string)
	a.note("turn/started", first)

	b.must("thread/resume", map[string]any{"threadId": th})
	_, e := b.call("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "intruder"}}})
	if e == nil {
		t.Fatalf("a second server started a turn on thread %s while turn %s ran in the first", th, first)
	}
	msg, _ := e["message"].(string)
	if code, _ := e["code"].(float64); code != -32016 {
		t.Errorf("the refusal has code %v, want -32016 (turnBusy)", e["code"])
	}
	if !strings.Contains(msg, first) || !strings.Contains(msg, fmt.Sprintf("process %d", a.cmd.Process.Pid)) {
		t.Errorf("the refusal %q does not name turn %s and process %d", msg, first, a.cmd.Process.Pid)
	}

	done := a.note("turn/completed", first)
	if done["status"] != "completed" || done["answer"] != "first done" {
		t.Errorf("first turn ended %v", done)
	}
	second := b.must("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "second"}}})["turn"].(map[string]any)["id"].(string)
	if got := b.note("turn/completed", second); got["status"] != "completed" || got["answer"] != "first done" {
		t.Errorf("second turn, once the thread was free: %v", got)
	}
	snap := storeShow(t, bin, env, db, th)
	storeNoText(t, snap, "intruder")
	if len(snap.Turns) != 2 {
		t.Errorf("%d turns stored, want 2: %+v", len(snap.Turns), snap.Turns)
	}
	// The second server's turn ran on the history as stored: the first
	// turn's items come before its own.
	var order []string
	for _, it := range snap.Items {
		order = append(order, it.TurnID)
	}
	if len(order) == 0 || order[0] != first || order[len(order)-1] != second {
		t.Errorf("items by turn %v, want %s's then %s's", order, first, second)
	}
}

// `rein run --thread X` while a server runs a turn of X is refused (exit
// non-zero, naming the turn), and the server refuses a turn of X while
// `rein run` runs one.
func TestStoreRunAndServeOnOneThread(t *testing.T) {
	bin := reinBinary(t)
	env := storeEnv(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	script := storeWrite(t, dir, "slow.yaml", storeSlowScript)
	srv := storeServe(t, bin, env, "--db", db, "--model", "scripted:"+script, "--workspace", dir)
	th := srv.must("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)["id"].(string)

	// run while serve runs.
	first := srv.must("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "first"}}})["turn"].(map[string]any)["id"].(string)
	srv.note("turn/started", first)
	code, _, errs := storeRein(t, bin, env, "run", "--db", db, "--thread", th, "--model", "scripted:"+script, "--workspace", dir, "intruder")
	if code == 0 {
		t.Errorf("rein run started a turn on thread %s while the server ran turn %s", th, first)
	}
	if !strings.Contains(errs, first) || !strings.Contains(errs, "running") {
		t.Errorf("rein run's refusal %q does not name the running turn %s", errs, first)
	}
	if got := srv.note("turn/completed", first); got["status"] != "completed" {
		t.Errorf("the server's turn ended %v", got)
	}

	// serve while run runs.
	run := exec.Command(bin, "run", "--db", db, "--thread", th, "--model", "scripted:"+script, "--workspace", dir, "from run")
	run.Env = env
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- run.Wait() }()
	defer func() {
		run.Process.Kill()
		<-runDone
	}()
	var running string
	for deadline := time.Now().Add(20 * time.Second); running == "" && time.Now().Before(deadline); {
		code, out, _ := storeRein(t, bin, env, "sessions", "show", "--json", "--db", db, th)
		var snap storeExport
		if code == 0 && json.Unmarshal([]byte(out), &snap) == nil {
			if last := snap.Last(); last != nil && last.Status == "inProgress" {
				running = last.ID
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if running == "" {
		t.Fatal("rein run's turn was never seen running")
	}
	_, e := srv.call("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "intruder"}}})
	if e == nil {
		t.Fatalf("the server started a turn on thread %s while rein run ran turn %s", th, running)
	}
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, running) || !strings.Contains(msg, fmt.Sprintf("process %d", run.Process.Pid)) {
		t.Errorf("the server's refusal %q does not name turn %s and process %d", msg, running, run.Process.Pid)
	}
	select {
	case err := <-runDone:
		runDone <- err
		if err != nil {
			t.Errorf("rein run: %v\n%s", err, runErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rein run did not finish")
	}
	snap := storeShow(t, bin, env, db, th)
	storeNoText(t, snap, "intruder")
	for _, tu := range snap.Turns {
		if tu.Status != "completed" {
			t.Errorf("turn %s is %s, want completed", tu.ID, tu.Status)
		}
	}
	if len(snap.Turns) != 2 {
		t.Errorf("%d turns stored, want 2 (one by the server, one by rein run)", len(snap.Turns))
	}
}

// storeTmpfs mounts a tmpfs of size at a fresh directory, unmounted when
// the test ends; it skips the test when that cannot be done here.
func storeTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// storeFill writes into dir until the disk is full, and returns the file
// that holds the space.
func storeFill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "fill")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return p
		}
	}
}

// The disk fills during a turn: the client is told the turn failed and why
// (never completed), thread/read and `rein sessions show` still read the
// thread, and what is stored does not say the turn completed, nor that
// rein stopped; once there is room it says the turn failed with the write
// error.
func TestStoreFullDisk(t *testing.T) {
	bin := reinBinary(t)
	disk := storeTmpfs(t, "2m")
	env := storeEnv(t)
	dir := t.TempDir()
	db := filepath.Join(disk, "rein.db")
	script := storeWrite(t, dir, "slow.yaml", storeSlowScript)
	srv := storeServe(t, bin, env, "--db", db, "--model", "scripted:"+script, "--workspace", dir)
	th := srv.must("thread/start", map[string]any{"workspace": dir})["thread"].(map[string]any)["id"].(string)

	turn := srv.must("turn/start", map[string]any{"threadId": th, "input": []map[string]any{{"type": "text", "text": "first"}}})["turn"].(map[string]any)["id"].(string)
	srv.note("turn/started", turn)
	fill := storeFill(t, disk)

	done := srv.note("turn/completed", turn)
	if done["status"] != "failed" {
		t.Errorf("turn/completed of a turn whose writes failed: %v, want failed", done)
	}
	if e, _ := done["error"].(string); !strings.Contains(e, "full") {
		t.Errorf("turn/completed error %q does not say the disk is full", e)
	}

	// Reads work on the full disk: in the server, and in another process.
	read := srv.must("thread/read", map[string]any{"threadId": th})
	for _, raw := range read["turns"].([]any) {
		tu := raw.(map[string]any)
		if tu["id"] == turn && tu["status"] != "failed" {
			t.Errorf("thread/read on the full disk: turn %v, want failed", tu)
		}
	}
	shown := storeShow(t, bin, env, db, th)
	if last := shown.Last(); last == nil || last.Status == "completed" {
		t.Errorf("rein sessions show on the full disk: %+v; the turn did not complete", last)
	}
	code, _, errs := storeRein(t, bin, env, "run", "--db", db, "--thread", th, "--model", "scripted:"+script, "--workspace", dir, "more")
	if code == 0 {
		t.Errorf("rein run on a full disk exited 0 (stderr %s)", errs)
	}

	// Room again: the server records, as it exits, how the turn ended.
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := srv.stop(); err != nil {
		t.Errorf("rein serve: %v (stderr %s)", err, srv.stderr)
	}
	shown = storeShow(t, bin, env, db, th)
	last := shown.Last()
	if last == nil || last.ID != turn || last.Status != "failed" || !strings.Contains(last.Error, "full") {
		t.Fatalf("stored turn after the disk was freed: %+v, want %s failed with the write error", last, turn)
	}
	if strings.Contains(last.Error, "rein stopped") {
		t.Errorf("stored turn says %q: the process did not stop, its write failed", last.Error)
	}
}

// A database on a file system that cannot be written is still read: `rein
// sessions show` and `list` work, and a turn is refused with an error that
// says why, before anything runs.
func TestStoreReadOnlyDatabase(t *testing.T) {
	bin := reinBinary(t)
	disk := storeTmpfs(t, "4m")
	env := storeEnv(t)
	dir := t.TempDir()
	db := filepath.Join(disk, "rein.db")
	script := storeWrite(t, dir, "quick.yaml", "rounds:\n  - text: hi\n")
	code, _, errs := storeRein(t, bin, env, "run", "--db", db, "--model", "scripted:"+script, "--workspace", dir, "hello")
	if code != 0 {
		t.Fatalf("rein run exited %d: %s", code, errs)
	}
	code, out, errs := storeRein(t, bin, env, "sessions", "list", "--all", "--json", "--db", db)
	var list struct{ Threads []struct{ ID string } }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Threads) != 1 {
		t.Fatalf("rein sessions list: exit %d, %s %s", code, out, errs)
	}
	th := list.Threads[0].ID
	if out, err := exec.Command("mount", "-o", "remount,ro", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot remount the tmpfs read-only: %v: %s", err, out)
	}
	snap := storeShow(t, bin, env, db, th)
	if last := snap.Last(); last == nil || last.Status != "completed" || last.Answer != "hi" {
		t.Errorf("thread read from a read-only file system: %+v", last)
	}
	code, _, errs = storeRein(t, bin, env, "run", "--db", db, "--thread", th, "--model", "scripted:"+script, "--workspace", dir, "more")
	if code == 0 || !strings.Contains(errs, "read-only") {
		t.Errorf("rein run on a read-only database: exit %d, %q; want a failure saying it is read-only", code, errs)
	}
}

// `rein run` whose disk fills during its turn exits non-zero with the write
// error; the stored turn does not say it completed.
func TestStoreRunOnAFullDisk(t *testing.T) {
	bin := reinBinary(t)
	disk := storeTmpfs(t, "2m")
	env := storeEnv(t)
	dir := t.TempDir()
	db := filepath.Join(disk, "rein.db")
	script := storeWrite(t, dir, "slow.yaml", storeSlowScript)
	quick := storeWrite(t, dir, "quick.yaml", "rounds:\n  - text: hi\n")
	if code, _, errs := storeRein(t, bin, env, "run", "--db", db, "--model", "scripted:"+quick, "--workspace", dir, "hello"); code != 0 {
		t.Fatalf("rein run exited %d: %s", code, errs)
	}
	code, out, errs := storeRein(t, bin, env, "sessions", "list", "--all", "--json", "--db", db)
	var list struct{ Threads []struct{ ID string } }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Threads) != 1 {
		t.Fatalf("rein sessions list: exit %d, %s %s", code, out, errs)
	}
	th := list.Threads[0].ID

	run := exec.Command(bin, "run", "--db", db, "--thread", th, "--model", "scripted:"+script, "--workspace", dir, "--json", "more")
	run.Env = env
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// The turn has started once its first event is out.
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		run.Wait()
		t.Fatalf("rein run printed nothing: %s", runErr.String())
	}
	fill := storeFill(t, disk)
	go io.Copy(io.Discard, stdout)
	err = run.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("rein run on a disk that filled during its turn: %v, want a non-zero exit", err)
	}
	if !strings.Contains(runErr.String(), "full") {
		t.Errorf("rein run's error %q does not say the disk is full", runErr.String())
	}
	shown := storeShow(t, bin, env, db, th)
	if last := shown.Last(); last == nil || last.Status == "completed" && last.Answer == "first done" {
		t.Errorf("the turn whose writes failed is stored %+v", last)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	shown = storeShow(t, bin, env, db, th)
	for _, tu := range shown.Turns[1:] {
		if tu.Status == "completed" {
			t.Errorf("the turn whose writes failed is stored completed: %+v", tu)
		}
	}
}
