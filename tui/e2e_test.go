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

// e2eScript plays the turns of TestChatInTmux in order. The scripted
// model fails a turn whose expectation does not hold, so each expect checks
// what the chat sent: the pasted lines whole, the queued text, the steer.
const e2eScript = `
rounds:
  - text: "PASTE-OK: three lines arrived"
    expect: [{last_user: {equals: "line one\nline two\nline three"}}]
  - text: "Streaming a long answer, word by word, slowly enough to interrupt it well before it ever reaches its end."
    chunk: 4
    delay: 150ms
  - calls: [{id: e1, name: edit_file, args: {path: notes.txt, old_string: "the sky is blue", new_string: "the sky is green"}}]
    expect: [{last_user: queued work}]
  - text: "EDIT-OK"
    expect: [{result: {call: e1, status: ok}}]
  - text: "Working on it, slowly, one small piece at a time, so there is room to steer."
    chunk: 3
    delay: 150ms
    expect: [{last_user: second question}]
  - text: "STEERED-OK: using the **blue** file"
    expect: [{last_user: use the blue file}]
  - text: "A last answer that streams slowly enough to be interrupted with Ctrl-C well before its end."
    chunk: 4
    delay: 150ms
`

// TestChatInTmux runs the real rein chat in a tmux terminal: a bracketed
// paste keeps its lines, Up recalls the last input, a turn streams and Esc
// interrupts it without starting what was queued, an approval box shows
// the edit as a coloured diff, Enter steers a running turn, Ctrl-C
// interrupts and a second Ctrl-C quits with the command that resumes the
// thread, that command replays the thread, and /undo there restores the
// file the edit turn wrote.
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
	notes := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(notes, []byte("first line\nthe sky is blue\nlast line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(e2eScript), 0o644); err != nil {
		t.Fatal(err)
	}

	db := filepath.Join(dir, "rein.db")
	// The input history goes to the test's state directory.
	env := "XDG_STATE_HOME=" + filepath.Join(dir, "state")

	tm := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock"), session: "chat"}
	// The shell reports the exit code, then keeps the pane for the capture.
	shell := fmt.Sprintf("%s %s chat --model scripted:%s --workspace %s --db %s --approval untrusted; echo CHAT-EXIT=$?; sleep 30", env, bin, script, ws, db)
	tm.run("new-session", "-d", "-s", "chat", "-x", "100", "-y", "30", shell)
	t.Cleanup(func() { tm.run("kill-server") })

	tm.waitFor("the chat's header", "rein chat · scripted:")

	// A bracketed paste of three lines arrives as three lines (the
	// scripted model checks the text), not as three sends.
	tm.paste("line one\nline two\nline three")
	tm.waitFor("the pasted lines in the input", "  line three")
	tm.keys("Enter")
	tm.waitFor("the answer to the paste", "PASTE-OK: three lines arrived")
	tm.waitFor("the idle status", "idle · scripted:")

	// Up recalls the last input into the input box, above the footer.
	tm.keys("Up")
	tm.waitForBottom("the recalled input", "› line one\n  line two\n  line three")
	tm.keys("Escape")
	tm.waitForBottom("the cleared input", "› ask anything")

	// A turn streams; a queued text waits behind it; Esc interrupts the
	// turn and the queue waits for the user.
	tm.keys("tell me a story", "Enter")
	tm.waitFor("the streamed text", "Streaming a long")
	tm.waitFor("the running status", "running round 1 · ")
	tm.keys("queued work", "Tab")
	tm.waitFor("the queued text", "⏵ queued 1: queued work")
	tm.keys("Escape")
	tm.waitFor("the interrupt in the transcript", "■ interrupted")
	tm.waitFor("the held queue", "1 queued turn waiting")
	if screen := tm.screen(); strings.Contains(screen, "before it ever reaches its end.") {
		t.Fatalf("the interrupted turn streamed to its end:\n%s", screen)
	}
	// Given time to start, the queued turn does not.
	time.Sleep(time.Second)
	if screen := tm.screen(); strings.Contains(screen, "› queued work") {
		t.Fatalf("Esc started the queued turn:\n%s", screen)
	}

	// Enter on the empty line sends the queue: its turn edits a file, and
	// the approval box shows the edit as a coloured diff.
	tm.keys("Enter")
	tm.waitFor("the queued turn", "› queued work")
	tm.waitFor("the approval box", "approve? edit_file notes.txt")
	tm.waitFor("the removed line", "-the sky is blue")
	tm.waitFor("the added line", "+the sky is green")
	colours := tm.run("capture-pane", "-e", "-p", "-t", tm.session)
	if !regexp.MustCompile(`\x1b\[[0-9;]*(31|38;5;1)m-the sky is blue`).MatchString(colours) ||
		!regexp.MustCompile(`\x1b\[[0-9;]*(32|38;5;2)m\+the sky is green`).MatchString(colours) {
		t.Fatalf("the diff is not coloured:\n%q", colours)
	}
	if data, _ := os.ReadFile(notes); strings.Contains(string(data), "green") {
		t.Fatal("the file changed before the approval")
	}
	tm.keys("y")
	tm.waitFor("the answer after the edit", "EDIT-OK")
	if data, _ := os.ReadFile(notes); !strings.Contains(string(data), "the sky is green") {
		t.Fatalf("the approved edit was not made: %q", data)
	}

	// Enter while a turn runs steers it: the scripted model's next round
	// expects the steered text, and answers only when it is there.
	tm.keys("second question", "Enter")
	tm.waitFor("the second turn streaming", "Working on it")
	tm.keys("use the blue file", "Enter")
	tm.waitFor("the steered text in the transcript", "› use the blue file  (steered into the turn)")
	tm.waitFor("the answer after the steer", "STEERED-OK: using the blue file")
	tm.waitFor("the idle status", "idle · scripted:")

	// Ctrl-C interrupts the turn; a second Ctrl-C quits and prints how to
	// resume the thread.
	tm.keys("one more", "Enter")
	tm.waitFor("the last turn streaming", "A last answer")
	tm.keys("C-c")
	tm.waitFor("the Ctrl-C hint", "press Ctrl-C again to quit")
	tm.keys("C-c")
	tm.waitFor("the chat to exit cleanly", "CHAT-EXIT=0")
	m := regexp.MustCompile(`To resume this thread: rein chat --thread (thread_[a-z0-9]+)`).FindStringSubmatch(tm.screen())
	if m == nil {
		t.Fatalf("no resume hint on the screen:\n%s", tm.screen())
	}

	// The command in the hint resumes the stored thread and replays it:
	// the steer, the answer, the edit's card with its diff.
	again := &tmux{t: t, socket: tm.socket, session: "again"}
	shell = fmt.Sprintf("%s %s chat --model scripted:%s --workspace %s --db %s --thread %s; echo CHAT-EXIT=$?; sleep 30", env, bin, script, ws, db, m[1])
	tm.run("new-session", "-d", "-s", "again", "-x", "100", "-y", "30", shell)
	again.waitFor("the resumed thread's steer", "› use the blue file")
	again.waitFor("the resumed thread's answer", "STEERED-OK: using the blue file")
	again.waitFor("the resumed thread's edit card", "✓ edit_file notes.txt")
	again.waitFor("the resumed edit's diff", "+the sky is green")
	again.keys("/threads", "Escape", " ", "Enter")
	again.waitFor("the thread in the list", "* "+m[1]+"  5 turns")

	// /undo reverts the last turn that changed files (the approved edit):
	// notes.txt is as it was before it.
	again.keys("/undo", "Escape", " ", "Enter")
	again.waitFor("the undo's report", "1 file(s) restored, 0 removed")
	if data, _ := os.ReadFile(notes); string(data) != "first line\nthe sky is blue\nlast line\n" {
		t.Fatalf("/undo did not restore notes.txt: %q", data)
	}
	again.keys("C-d")
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
		case "Enter", "Escape", "C-c", "C-d", "Tab", "Up", "Down":
			m.run("send-keys", "-t", m.session, k)
		default:
			m.run("send-keys", "-t", m.session, "-l", k)
		}
		// Let the program read one key before the next, as a person would
		// (a lone Escape is told from an escape sequence by a pause).
		time.Sleep(100 * time.Millisecond)
	}
}

// paste pastes text as a terminal does, in a bracketed paste (the program
// asked for one), its line ends as the terminal sends them.
func (m *tmux) paste(text string) {
	m.t.Helper()
	m.run("set-buffer", "-b", "e2e", text)
	m.run("paste-buffer", "-p", "-d", "-b", "e2e", "-t", m.session)
	time.Sleep(100 * time.Millisecond)
}

// waitForBottom waits until the lines just above the footer (the last
// line on the screen) are want.
func (m *tmux) waitForBottom(what, want string) {
	m.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	n := strings.Count(want, "\n") + 1
	for {
		visible := strings.Split(strings.TrimRight(m.run("capture-pane", "-p", "-t", m.session), "\n "), "\n")
		var got string
		if len(visible) > n {
			lines := visible[len(visible)-1-n : len(visible)-1]
			for i := range lines {
				lines[i] = strings.TrimRight(lines[i], " ")
			}
			got = strings.Join(lines, "\n")
		}
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("timed out waiting for %s (%q above the footer); the screen:\n%s", what, want, strings.Join(visible, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
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
