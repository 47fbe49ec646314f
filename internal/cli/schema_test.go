package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/record"
)

const personSchema = `{"title":"Person","type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`

// TestRunSchemaPrintsTheJSON: rein run --schema asks for the answer in the
// schema's shape (a scripted model takes it as a tool beside the workspace's, forced after a wrong call), repairs
// a wrong one, and prints the JSON alone on stdout, the turn on stderr; with
// --json the outcome line carries it.
func TestRunSchemaPrintsTheJSON(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	schema := filepath.Join(dir, "person.json")
	if err := os.WriteFile(schema, []byte(personSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `rounds:
  - calls: [{name: Person, args: {name: Alice, age: thirty}}]
    expect: [{tools_include: [Person, read_file]}]
  - calls: [{name: Person, args: {name: Alice, age: 30}}]
    expect: [{result: {tool: Person, contains: age}}, {tool_choice: required}]
`
	code, stdout, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+writeScript(t, script), "--workspace", dir, "--schema", schema, "who?")
	if code != ExitCompleted {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got["name"] != "Alice" || got["age"] != 30.0 {
		t.Fatalf("stdout %q (%v), want the answer's JSON alone", stdout, err)
	}
	if !strings.Contains(stderr, "completed") {
		t.Errorf("stderr %q lacks the turn's summary", stderr)
	}

	code, stdout, stderr = runMain(t, context.Background(), "run", "--json", "--model", "scripted:"+writeScript(t, script), "--workspace", dir, "--schema", schema, "who?")
	if code != ExitCompleted {
		t.Fatalf("--json: exit %d, stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var last struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "outcome" || string(last.Output) != `{"name":"Alice","age":30}` {
		t.Errorf("outcome line %s, want output {\"name\":\"Alice\",\"age\":30}", lines[len(lines)-1])
	}
}

func TestRunSchemaRefusesABadSchema(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	script := writeScript(t, "rounds:\n  - text: hi\n")
	for name, body := range map[string]string{"list.json": `{"type":"array"}`, "broken.json": `{`} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if code, _, stderr := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--workspace", dir, "--schema", p, "x"); code != ExitUsage || !strings.Contains(stderr, "--schema") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming --schema", name, code, stderr)
		}
	}
	if code, _, _ := runMain(t, context.Background(), "run", "--model", "scripted:"+script, "--workspace", dir, "--schema", filepath.Join(dir, "none.json"), "x"); code != ExitUsage {
		t.Errorf("a missing schema file: exit %d, want 2", code)
	}
}

// TestAnswerKeepsTheSchemaOfAPausedTurn: a --schema turn that pauses on
// ask_user and is answered with rein answer still asks for the structured
// answer (the output tool is offered, a text answer is refused) and prints
// the JSON alone on stdout. Before, the resumed turn forgot the schema and
// printed the model's text.
func TestAnswerKeepsTheSchemaOfAPausedTurn(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	schema := filepath.Join(dir, "person.json")
	if err := os.WriteFile(schema, []byte(personSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	ask := writeScript(t, "rounds:\n  - calls:\n      - {id: q1, name: ask_user, args: {questions: [{prompt: \"Whose?\"}]}}\n")
	code, stdout, stderr := runMain(t, context.Background(), "run", "--json", "--db", db, "--model", "scripted:"+ask, "--workspace", dir, "--schema", schema, "who?")
	if code != ExitPaused {
		t.Fatalf("run: exit %d, want paused\n%s", code, stderr)
	}
	thread := outcomeOf(t, stdout)["thread_id"].(string)
	answer := writeScript(t, `rounds:
  - text: "Ada, 36"
    expect: [{tools_include: [Person]}]
  - calls: [{name: Person, args: {name: Ada, age: 36}}]
    expect: [{tool_choice: required}]
`)
	code, stdout, stderr = runMain(t, context.Background(), "answer", "--db", db, "--model", "scripted:"+answer, thread, "Ada")
	if code != ExitCompleted {
		t.Fatalf("answer: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got["name"] != "Ada" || got["age"] != 36.0 {
		t.Fatalf("stdout %q (%v), want the answer's JSON alone", stdout, err)
	}
}

// TestChatSchemaRefusesABadSchema: rein chat --schema reads the schema
// before it takes the terminal, and refuses one that is not an object
// schema as a usage error naming the flag.
func TestChatSchemaRefusesABadSchema(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "list.json")
	if err := os.WriteFile(p, []byte(`{"type":"array"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, context.Background(), "chat", "--model", "scripted:"+writeScript(t, "rounds: []\n"), "--workspace", dir, "--schema", p); code != ExitUsage || !strings.Contains(stderr, "--schema") || !strings.Contains(stderr, "root must be") {
		t.Errorf("exit %d, stderr %q; want 2 naming --schema and what is wrong", code, stderr)
	}
}

// TestRunThreadKeepsTheThreadsOutputSchema: rein run --thread on a thread
// whose default output schema was set (thread/start's output) answers in
// JSON, printed alone on stdout as --schema prints it.
func TestRunThreadKeepsTheThreadsOutputSchema(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "rein.db")
	st, err := openStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	th := record.Thread{ID: "thread_typed", Created: now, Updated: now,
		Settings: record.Settings{Workspace: dir, Model: "scripted:x", Output: json.RawMessage(personSchema)}}
	if err := st.SaveThread(context.Background(), th); err != nil {
		t.Fatal(err)
	}
	st.Close()
	script := writeScript(t, `rounds:
  - calls: [{name: Person, args: {name: Ada, age: 36}}]
    expect: [{tools_include: [Person]}]
`)
	code, stdout, stderr := runMain(t, context.Background(), "run", "--db", db, "--model", "scripted:"+script, "--thread", th.ID, "who?")
	if code != ExitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got["name"] != "Ada" {
		t.Fatalf("stdout %q (%v), want the answer's JSON alone", stdout, err)
	}
}
