package cli

import (
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// TestChatModelSwitchTakesTheNextTurnAndIsStored: /model makes the chosen
// model the thread's for its next runs in this process and stores it in the
// thread's settings, so a resumed thread keeps it; a model that does not
// resolve changes nothing.
func TestChatModelSwitchTakesTheNextTurnAndIsStored(t *testing.T) {
	clearKeys(t)
	dir := t.TempDir()
	first := writeScript(t, "rounds:\n  - text: one\n")
	second := writeScript(t, "rounds:\n  - text: two\n")
	st, err := openStore(t.Context(), filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &serveBackend{f: &serveFlags{model: "scripted:" + first, approval: "on-request"}, dir: dir, logw: io.Discard, st: st}
	defer b.close()
	th, err := st.CreateThread(t.Context(), record.Thread{Settings: record.Settings{Model: "scripted:" + first, Workspace: dir}})
	if err != nil {
		t.Fatal(err)
	}
	model := func() string {
		t.Helper()
		// The scheduler hands setup the settings it loaded, the old model.
		o, release, err := b.agent().Setup(t.Context(), session.Thread{ID: th.ID, Settings: th.Settings})
		if err != nil {
			t.Fatal(err)
		}
		if release != nil {
			release()
		}
		// Which script answers says which model the run got.
		s, err := o.Model.Stream(t.Context(), &llm.Request{Items: []llm.Item{llm.UserText("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		it := llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts}
		return it.Text()
	}
	if got := model(); got != "one" {
		t.Fatalf("model before the switch = %s", got)
	}
	if err := b.agent().SwitchModel(t.Context(), th.ID, "nosuchprovider:x"); err == nil {
		t.Fatal("a model that does not resolve was accepted")
	}
	if err := b.agent().SwitchModel(t.Context(), th.ID, "scripted:"+second); err != nil {
		t.Fatal(err)
	}
	if got := model(); got != "two" {
		t.Errorf("the run after the switch was answered by %q, want the second script's", got)
	}
	stored, err := st.Thread(t.Context(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Settings.Model != "scripted:"+second || stored.Settings.Workspace != dir {
		t.Errorf("stored settings = %+v, want model scripted:%s in %s", stored.Settings, second, dir)
	}
}

func TestConfiguredModelsForThePicker(t *testing.T) {
	f := &config.File{
		Model:     "openai:gpt-5",
		Providers: map[string]config.Provider{"local": {Models: map[string]config.Model{"qwen3": {}}}},
		Models:    map[string]config.Model{"anthropic:claude-sonnet-4-5": {}, "openai:*": {}},
	}
	got := configuredModels(f, "deepseek:deepseek-chat")
	want := []string{"deepseek:deepseek-chat", "anthropic:claude-sonnet-4-5", "local:qwen3", "openai:gpt-5"}
	if !slices.Equal(got, want) {
		t.Errorf("models = %q, want %q", got, want)
	}
	if got := configuredModels(nil, ""); len(got) != 0 {
		t.Errorf("models without a config = %q", got)
	}
}
