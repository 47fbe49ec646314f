package agent

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/redact"
)

// TestSecretsKeepTheRedactorWhileTheEnvironmentStays: a turn's redactor is
// built once per workspace dir and environment; a variable set, changed or
// removed builds a new one, so a key exported later is redacted, and one
// rotated away is no longer the only value masked.
func TestSecretsKeepTheRedactorWhileTheEnvironmentStays(t *testing.T) {
	s := NewSecrets(nil)
	env := []string{"HOME=/home/ann", "PATH=/usr/bin"}
	r1 := s.redactor("/ws", env)
	if r2 := s.redactor("/ws", append([]string(nil), env...)); r2 != r1 {
		t.Error("the same environment built a new redactor")
	}
	if r3 := s.redactor("/other", env); r3 == r1 {
		t.Error("another workspace got the first one's redactor")
	}
	const key = "Zq8Wx2Lp5Nv7Kc3Hb9Td"
	later := append(append([]string(nil), env...), "DEPLOY_TOKEN="+key)
	r4 := s.redactor("/ws", later)
	if r4 == r1 {
		t.Fatal("a variable exported later did not build a new redactor")
	}
	if got := r4.Redact("the key " + key); strings.Contains(got, key) || !strings.Contains(got, redact.Mask) {
		t.Errorf("a key exported later: %q", got)
	}
	// A configured key variable is read from the same snapshot.
	s.keyEnvs = []string{"MY_PROVIDER_KEY"}
	s.byDir = nil
	const pk = "pk-live-9a8b7c6d5e4f"
	r5 := s.redactor("/ws", append(later, "MY_PROVIDER_KEY="+pk))
	if got := r5.Redact(pk); got != redact.Mask {
		t.Errorf("a configured key variable: %q", got)
	}
}

// TestSecretsBoundTheRedactorsKept: one redactor per workspace dir, and
// no more than maxRedactors of them.
func TestSecretsBoundTheRedactorsKept(t *testing.T) {
	s := NewSecrets(nil)
	env := []string{"HOME=/home/ann"}
	for i := range 3 * maxRedactors {
		s.redactor("/ws/"+strings.Repeat("x", i), env)
		if n := len(s.byDir); n > maxRedactors {
			t.Fatalf("%d redactors kept", n)
		}
	}
}
