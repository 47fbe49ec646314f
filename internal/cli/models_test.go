package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelsListsRequestSettings checks that `rein models` shows the config
// file's request settings under each model they apply to, with header names
// but never their values.
func TestModelsListsRequestSettings(t *testing.T) {
	clearKeys(t)
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "rein")
	os.MkdirAll(dir, 0o755)
	conf := `[models."anthropic:claude-sonnet-4-5"]
thinking_budget = 16000
prompt_cache = true

[models."openai:gpt-5"]
reasoning_effort = "low"
headers = { "X-Secret" = "s3cr3t", "X-Title" = "rein" }
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMain(t, context.Background(), "models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"  claude-sonnet-4-5: prompt_cache = true; thinking_budget = 16000\n",
		"  gpt-5: headers = X-Secret, X-Title; reasoning_effort = \"low\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Error("a header value was printed")
	}
	if strings.Contains(out, "gpt-5-mini:") {
		t.Error("a model without settings got a settings line")
	}
}
