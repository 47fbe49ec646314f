package anthropic

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testkit"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// TestEngineConformanceRecorded drives the recorded suites through the turn
// engine instead of by hand: the engine builds every request, runs tools of
// the recorded names and decides when the turn ends. Each request it sent is
// compared with the one the recording client sent, as in
// TestConformanceRecorded.
func TestEngineConformanceRecorded(t *testing.T) {
	root := recordedRoot(t)
	for _, suite := range conformanceSuites {
		files := suiteFiles(t, root, suite)
		pass := 0
		for _, f := range files {
			name := strings.TrimSuffix(strings.TrimPrefix(f, filepath.Join(root, suite)+"/"), ".yaml")
			if t.Run(suite+"/"+name, func(t *testing.T) { replayThroughEngine(t, f, strings.Contains(suite, "CacheControl")) }) {
				pass++
			}
		}
		t.Logf("%s: %d/%d recordings pass through the engine", suite, pass, len(files))
	}
}

// recordedTool is a tool of a recorded name and schema.
type recordedTool struct{ spec tool.Spec }

func (r recordedTool) Spec() tool.Spec { return r.spec }

func (r recordedTool) Run(_ context.Context, c tool.Call) (tool.Output, error) {
	out, err := answerCall(c.Name, string(c.Args))
	if err != nil {
		return tool.Output{}, err
	}
	return tool.Text(out), nil
}

func replayThroughEngine(t *testing.T, path string, cache bool) {
	rec, ex := loadExchanges(t, path)
	rp := testkit.NewReplayer(rec)
	defer rp.Close()
	req, opts := requestFrom(t, ex[0].req, cache)
	opts.BaseURL, opts.APIKey = rp.URL, "recorded"
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var tools []tool.Tool
	for _, s := range req.Tools {
		tools = append(tools, recordedTool{tool.Spec{Name: s.Name, Description: s.Description, Schema: s.Schema, Access: tool.ReadOnly}})
	}
	e, err := loop.New(loop.Options{
		Model:           m,
		ModelName:       opts.Model,
		System:          req.System,
		Tools:           tool.NewSet(tools...),
		MaxOutputTokens: req.MaxOutputTokens,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Run(context.Background(), loop.Turn{Input: req.Items})
	if err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	if out.Status != loop.StatusCompleted || out.StopReason != loop.StopFinished {
		t.Errorf("outcome %s/%s (%v), want completed/finished", out.Status, out.StopReason, out.Err)
	}
	if out.Rounds != len(ex) || out.ToolSteps != len(ex)-1 {
		t.Errorf("%d rounds and %d tool steps, want %d and %d", out.Rounds, out.ToolSteps, len(ex), len(ex)-1)
	}

	sent := rp.Requests()
	if len(sent) != len(ex) {
		t.Fatalf("the engine sent %d requests, the recording has %d", len(sent), len(ex))
	}
	for i := range ex {
		compareRequests(t, i+1, sent[i], ex[i].req)
	}

	// The answer is the recorded final text.
	var final strings.Builder
	for _, b := range ex[len(ex)-1].resp.Content {
		if b["type"] == "text" {
			final.WriteString(b["text"].(string))
		}
	}
	if got, want := strings.TrimSpace(out.Answer), strings.TrimSpace(final.String()); got != want {
		t.Errorf("answer %q, recorded %q", got, want)
	}
	checkAnswer(t, path, out.Answer)

	// History keeps the thinking blocks of the first answer with their
	// signatures.
	var wantThinking, gotThinking []llm.Opaque
	for _, b := range ex[0].resp.Content {
		if b["type"] == "thinking" {
			wantThinking = append(wantThinking, llm.Opaque{Provider: "anthropic", Signature: b["signature"].(string)})
		}
	}
	for _, it := range out.Items {
		if it.Role != llm.RoleAssistant {
			continue
		}
		for _, p := range it.Parts {
			if p.Kind == llm.PartReasoning && p.Opaque != nil {
				gotThinking = append(gotThinking, *p.Opaque)
			}
		}
		break
	}
	if !reflect.DeepEqual(gotThinking, wantThinking) {
		g, _ := json.Marshal(gotThinking)
		w, _ := json.Marshal(wantThinking)
		t.Errorf("thinking kept in history %s, recorded %s", g, w)
	}
}
