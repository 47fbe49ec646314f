package redact

import (
	"slices"
	"strings"
	"testing"
)

func TestEnvSecretsReadsEverySecretName(t *testing.T) {
	env := []string{
		"MYSQL_PWD=Pw-5555555555",
		"DB_PASSWD=Pw-6666666666",
		"SENTRY_DSN=https://abc123@o1.ingest.sentry.io/7",
		"SESSION_JWT=jwt-77777777777",
		"BASIC_AUTH_HEADER=dXNlcjpwYXNzd29yZA==",
		"GOOGLE_CREDENTIAL_JSON={\"k\":\"v-8888\"}",
		"LOCAL_llm_key=lower-case-name-9",
		"GH_PAT=pat-000000000",
		"DATABASE_URL=postgres://app:hunter2-db@db:5432/app",
		"REDIS_URL=redis://:short@cache:6379",
	}
	got := EnvSecrets(env)
	want := []string{
		"Pw-5555555555", "Pw-6666666666", "https://abc123@o1.ingest.sentry.io/7", "jwt-77777777777",
		"dXNlcjpwYXNzd29yZA==", "{\"k\":\"v-8888\"}", "lower-case-name-9", "pat-000000000",
		"postgres://app:hunter2-db@db:5432/app", "hunter2-db",
		"redis://:short@cache:6379", "short",
	}
	if !slices.Equal(got, want) {
		t.Errorf("EnvSecrets =\n %q\nwant\n %q", got, want)
	}
}

func TestEnvSecretsLeavesOrdinaryValues(t *testing.T) {
	env := []string{
		"PWD=/home/ann/src/proj",
		"OLDPWD=/home/ann",
		"SSH_AUTH_SOCK=/tmp/ssh-XXXXabcd/agent.1234",
		"GOOGLE_APPLICATION_CREDENTIALS=/home/ann/.config/gcloud/key.json",
		"OPENAI_MAX_TOKENS=100000000",
		"FEATURE_AUTH=disabled",
		"API_KEY=1",
		"HOME=/home/ann",
		"TERM=xterm-256color",
		"HTTP_PROXY=http://proxy.internal:3128",
	}
	if got := EnvSecrets(env); len(got) != 0 {
		t.Errorf("EnvSecrets = %q, want none: masking them would blank paths, numbers and words", got)
	}
}

func TestLooksSecret(t *testing.T) {
	for v, want := range map[string]bool{
		"hunter2hunter2":             true,
		"correcthorsebatterystaple":  true,
		"sk-short-but-mixed":         true,
		"disabled":                   false,
		"12345678":                   false,
		"1234567890123456789":        false,
		"short1":                     false,
		"/run/secrets/api_key":       false,
		"/not a path/but spaced 123": true,
	} {
		if got := LooksSecret(v); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestEnvFollowsTheEnvironment(t *testing.T) {
	t.Setenv("REIN_TEST_API_KEY", "first-secret-value-1")
	if got := Env().Redact("x first-secret-value-1 y"); got != "x "+Mask+" y" {
		t.Errorf("got %q", got)
	}
	// A key exported later is redacted too.
	t.Setenv("REIN_TEST_API_KEY", "second-secret-value-2")
	if got := Env().Redact("x second-secret-value-2 y"); got != "x "+Mask+" y" {
		t.Errorf("after the change: got %q", got)
	}
	// Env knows no workspace, so it leaves the home directory alone.
	t.Setenv("HOME", "/home/ann")
	if got := Env().Redact("/home/ann/x"); !strings.HasPrefix(got, "/home/ann") {
		t.Errorf("Env shortened the home directory: %q", got)
	}
}
