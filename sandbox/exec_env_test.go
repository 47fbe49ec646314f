package sandbox

import (
	"slices"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret bool
	}{
		{"OPENAI_API_KEY", true},
		{"ANTHROPIC_API_KEY", true},
		{"DEEPSEEK_API_KEY", true},
		{"GITHUB_TOKEN", true},
		{"GH_TOKEN", true},
		{"AWS_ACCESS_KEY_ID", true},
		{"AWS_REGION", true},
		{"DB_PASSWORD", true},
		{"CLIENT_SECRET", true},
		{"my_api_key", true},
		{"SSH_AUTH_SOCK", true},
		{"DATABASE_URL", true},
		{"PATH", false},
		{"HOME", false},
		{"LANG", false},
		{"TERM", false},
		{"GOPATH", false},
		{"USER", false},
		{"KEYBOARD_LAYOUT", false},
	} {
		if got := IsSecretName(c.name); got != c.secret {
			t.Errorf("IsSecretName(%q) = %v, want %v", c.name, got, c.secret)
		}
	}
}

func TestScrubEnvKeepsOrderAndDropsSecrets(t *testing.T) {
	in := []string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "LANG=C", "=weird", "GITHUB_TOKEN=x", "TERM=xterm", "HOME=/root"}
	want := []string{"PATH=/bin", "LANG=C", "TERM=xterm", "HOME=/root"}
	if got := ScrubEnv(in); !slices.Equal(got, want) {
		t.Errorf("ScrubEnv = %q, want %q", got, want)
	}
}
