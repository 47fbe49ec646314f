package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// e2eScript plays two turns. The first streams slowly so the test can
// interrupt it; in the second, the test steers the finish round while it
// streams, and the round after it expects the steered text (the scripted
// model fails the turn when an expectation does not hold).
const e2eScript = `
rounds:
  - text: "Streaming a long answer, word by word, slowly enough to interrupt it well before it ever reaches its end."
    chunk: 4
    delay: 150ms
  - text: "Working on it, slowly, one small piece at a time, so there is room to steer."
    chunk: 3
    delay: 150ms
    expect: [{last_user: second question}]
  - text: "STEERED-OK: using the **blue** file"
    expect: [{last_user: use the blue file}]
`

// TestChatInTmux runs the real rein chat in a tmux terminal: a turn streams,
// Esc interrupts it, Enter steers a running turn, and a second chat resumes
// the stored thread.
func TestChatInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the rein command")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rein")
	build := exec.Command("go", "build", "-o", bin, "github.com/reinhq/rein/cmd/rein")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(e2eScript), 0o644); err != nil {
		t.Fatal(err)
	}

	db := filepath.Join(dir, "rein.db")

	tm := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock"), session: "chat"}
	// The shell reports the exit code, then keeps the pane for the capture.
	shell := fmt.Sprintf("%s chat --model scripted:%s --workspace %s --db %s; echo CHAT-EXIT=$?; sleep 30", bin, script, ws, db)
	tm.run("new-session", "-d", "-s", "chat", "-x", "100", "-y", "30", shell)
	t.Cleanup(func() { tm.run("kill-server") })

	tm.waitFor("the chat's header", "rein chat · scripted:")

	// A turn streams, and Esc interrupts it.
	tm.keys("tell me a story", "Enter")
	tm.waitFor("the streamed text", "Streaming a long")
	tm.waitFor("the running status", "running round 1 · scripted:")
	tm.keys("Escape")
	tm.waitFor("the interrupt in the transcript", "■ interrupted")
	tm.waitFor("the interrupted status", "interrupted · scripted:")
	if screen := tm.screen(); strings.Contains(screen, "before it ever reaches its end.") {
		t.Fatalf("the interrupted turn streamed to its end:\n%s", screen)
	}

	// Enter while a turn runs steers it: the scripted model's next round
	// expects the steered text, and answers only when it is there.
	tm.keys("second question", "Enter")
	tm.waitFor("the second turn streaming", "Working on it")
	tm.keys("use the blue file", "Enter")
	tm.waitFor("the steered text in the transcript", "› use the blue file  (steered into the turn)")
	tm.waitFor("the answer after the steer", "STEERED-OK: using the blue file")
	tm.waitFor("the idle status", "idle · scripted:")

	tm.keys("C-c")
	tm.waitFor("the chat to exit cleanly", "CHAT-EXIT=0")

	// The thread was stored: a new chat resumes it and shows what was said.
	m := regexp.MustCompile(`thread (thread_[a-z0-9]+)`).FindStringSubmatch(tm.screen())
	if m == nil {
		t.Fatalf("no thread id on the screen:\n%s", tm.screen())
	}
	again := &tmux{t: t, socket: tm.socket, session: "again"}
	shell = fmt.Sprintf("%s chat --model scripted:%s --workspace %s --db %s --thread %s; echo CHAT-EXIT=$?; sleep 30", bin, script, ws, db, m[1])
	tm.run("new-session", "-d", "-s", "again", "-x", "100", "-y", "30", shell)
	again.waitFor("the resumed thread's steer", "› use the blue file")
	again.waitFor("the resumed thread's answer", "STEERED-OK: using the blue file")
	again.keys("/threads", "Enter")
	again.waitFor("the thread in the list", "* "+m[1]+"  2 turns")
	again.keys("C-c")
	again.waitFor("the second chat to exit cleanly", "CHAT-EXIT=0")
}

// tmux drives a tmux server on its own socket.
type tmux struct {
	t       *testing.T
	socket  string
	session string
}

func (m *tmux) run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", m.socket}, args...)...).CombinedOutput()
	if err != nil && args[0] != "kill-server" {
		m.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys types text, then presses the named keys; literal text is sent as
// such, key names (Enter, Escape, C-c) as keys.
func (m *tmux) keys(keys ...string) {
	m.t.Helper()
	for _, k := range keys {
		switch k {
		case "Enter", "Escape", "C-c", "Tab":
			m.run("send-keys", "-t", m.session, k)
		default:
			m.run("send-keys", "-t", m.session, "-l", k)
		}
		// Let the program read one key before the next, as a person would
		// (a lone Escape is told from an escape sequence by a pause).
		time.Sleep(100 * time.Millisecond)
	}
}

// screen returns the pane with its scrollback.
func (m *tmux) screen() string {
	return m.run("capture-pane", "-p", "-t", m.session, "-S", "-200")
}

// waitFor waits until the screen shows want.
func (m *tmux) waitFor(what, want string) {
	m.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		screen := m.screen()
		if strings.Contains(screen, want) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("timed out waiting for %s (%q); the screen:\n%s", what, want, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
