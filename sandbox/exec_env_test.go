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

func TestCommandEnvIsAnAllowList(t *testing.T) {
	in := []string{
		"PATH=/bin", "MYSQL_PWD=pw1", "REDIS_URL=redis://:pw2@h", "SENTRY_DSN=https://k@sentry/1",
		"CI_JOB_JWT=jwt", "OPENAI_API_KEY=sk-1", "LC_ALL=C.UTF-8", "HOME=/home/u", "LANG=C",
		"TERM=xterm", "TZ=UTC", "USER=u", "SHELL=/bin/sh", "TMPDIR=/var/tmp", "GOFLAGS=-mod=mod",
		"=weird", "NOEQUALS", "LCX=1", "PATHX=1",
	}
	for _, c := range []struct {
		extra []string
		want  []string
	}{
		{nil, []string{"PATH=/bin", "LC_ALL=C.UTF-8", "HOME=/home/u", "LANG=C", "TERM=xterm", "TZ=UTC", "USER=u", "SHELL=/bin/sh", "TMPDIR=/var/tmp"}},
		{[]string{"GOFLAGS"}, []string{"PATH=/bin", "LC_ALL=C.UTF-8", "HOME=/home/u", "LANG=C", "TERM=xterm", "TZ=UTC", "USER=u", "SHELL=/bin/sh", "TMPDIR=/var/tmp", "GOFLAGS=-mod=mod"}},
	} {
		if got := CommandEnv(in, c.extra); !slices.Equal(got, c.want) {
			t.Errorf("CommandEnv(extra %q) = %q, want %q", c.extra, got, c.want)
		}
	}
}

func TestCheckEnvName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"GOFLAGS", true}, {"_X1", true}, {"a_b", true},
		{"", false}, {"1X", false}, {"A=B", false}, {"NODE_*", false}, {"A B", false}, {"É", false},
	} {
		if err := CheckEnvName(c.name); (err == nil) != c.ok {
			t.Errorf("CheckEnvName(%q) = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
