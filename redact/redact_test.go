package redact

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestRedactMasksTokensByShape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"openai key", "401: invalid key sk-abc123DEF456ghi789JKL012 given", "401: invalid key [REDACTED] given"},
		{"openai project key", "key=sk-proj-Ab3_dEf-9hIjKlMnOpQrStUv", "key=[REDACTED]"},
		{"anthropic key", "x-api-key: sk-ant-api03-AAAABBBBCCCC1111-dddd", "x-api-key: [REDACTED]"},
		{"github classic token", "token ghp_0123456789abcdefghijABCDEFGHIJ0123 rejected", "token [REDACTED] rejected"},
		{"github oauth token", "gho_0123456789abcdefghijABCDEFGHIJ0123", "[REDACTED]"},
		{"github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"slack token", "slack: xoxb-1234567890-abcdefghij", "slack: [REDACTED]"},
		{"aws access key id", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE done", "AWS_ACCESS_KEY_ID=[REDACTED] done"},
		{"bearer token", "sent Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "sent Bearer [REDACTED]"},
		{"authorization header", "GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\nHost: x", "GET / HTTP/1.1\r\nAuthorization: [REDACTED]\r\nHost: x"},
		{"authorization in json", `{"authorization": "token abc def", "x": 1}`, `{"authorization": "[REDACTED]", "x": 1}`},
		{"authorization header with bearer masked once", "Authorization: Bearer abcdefghijk", "Authorization: [REDACTED]"},
		{"several secrets in one text", "a sk-abc123DEF456ghi789JKL012 b AKIAIOSFODNN7EXAMPLE c", "a [REDACTED] b [REDACTED] c"},
	}
	r := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactLeavesLookalikesAlone(t *testing.T) {
	r := New(Options{})
	for _, in := range []string{
		"the task-abcdefghijklmnopqrst finished",
		"install sk-learn-compatible-models first",
		"ghp_short",
		"the bearer of bad news",
		"AKIA lower akiaiosfodnn7example",
		"no secrets here, just /usr/lib and some code: x := y",
	} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestRedactMasksConfiguredSecrets(t *testing.T) {
	r := New(Options{Secrets: []string{"hunter2hunter2", "short", "hunter2hunter2-longer", "  "}})
	tests := []struct{ in, want string }{
		{"password hunter2hunter2 leaked", "password [REDACTED] leaked"},
		{"the longer hunter2hunter2-longer one", "the longer [REDACTED] one"},
		{"too short to matter: short", "too short to matter: short"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnvSecretsPicksSecretNames(t *testing.T) {
	env := []string{
		"OPENAI_API_KEY=k-111111111",
		"GITHUB_TOKEN=t-222222222",
		"client_secret=s-333333333",
		"DB_PASSWORD=p-444444444",
		"HOME=/home/ann",
		"KEYBOARD=us",
		"EMPTY_TOKEN=",
		"NOEQUALS",
	}
	got := EnvSecrets(env)
	want := []string{"k-111111111", "t-222222222", "s-333333333", "p-444444444"}
	if !slices.Equal(got, want) {
		t.Errorf("EnvSecrets = %q, want %q", got, want)
	}
}

func TestFromEnvReadsTheEnvironment(t *testing.T) {
	t.Setenv("REIN_TEST_TOKEN", "tok-from-the-environment")
	t.Setenv("HOME", "/home/ann")
	r := FromEnv(Options{})
	got := r.Redact("failed with tok-from-the-environment in /home/ann/x")
	if want := "failed with [REDACTED] in ~/x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRedactShortensHomeOutsideTheWorkspace(t *testing.T) {
	r := New(Options{Home: "/home/ann/", Workspace: "/home/ann/src/proj"})
	tests := []struct{ name, in, want string }{
		{"home path", "open /home/ann/.ssh/id_rsa: denied", "open ~/.ssh/id_rsa: denied"},
		{"home alone", "cd /home/ann", "cd ~"},
		{"quoted", `"/home/ann/.config"`, `"~/.config"`},
		{"workspace kept", "edit /home/ann/src/proj/main.go", "edit /home/ann/src/proj/main.go"},
		{"workspace itself kept", "in /home/ann/src/proj.", "in /home/ann/src/proj."},
		{"sibling of workspace", "/home/ann/src/proj2/x", "~/src/proj2/x"},
		{"other user", "/home/anna/x", "/home/anna/x"},
		{"inside another path", "/mnt/home/ann/x", "/mnt/home/ann/x"},
		{"several", "/home/ann/a and /home/ann/src/proj/b and /home/ann", "~/a and /home/ann/src/proj/b and ~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactIgnoresRootHome(t *testing.T) {
	r := New(Options{Home: "/"})
	if got := r.Redact("/usr/bin/go"); got != "/usr/bin/go" {
		t.Errorf("home / rewrote %q", got)
	}
}

func TestNilRedactorKeepsText(t *testing.T) {
	var r *Redactor
	if got := r.Redact("sk-abc123DEF456ghi789JKL012"); got != "sk-abc123DEF456ghi789JKL012" {
		t.Errorf("nil redactor changed text to %q", got)
	}
}

// cleanText is tool error output with paths, code and numbers but no secret.
var cleanText = strings.Repeat("open internal/store/items.go: no such file or directory\n"+
	"exit status 1: go build ./... failed at line 42 (x := y + 1)\n", 32)

func BenchmarkRedactCleanText(b *testing.B) {
	r := New(Options{
		Secrets:   []string{"a-configured-secret-value", "another-secret-value-0123"},
		Home:      "/home/ann",
		Workspace: "/home/ann/src/proj",
	})
	b.SetBytes(int64(len(cleanText)))
	b.ReportAllocs()
	for b.Loop() {
		if r.Redact(cleanText) != cleanText {
			b.Fatal("clean text changed")
		}
	}
}

func BenchmarkRedactWithSecret(b *testing.B) {
	r := New(Options{Home: "/home/ann"})
	text := cleanText + "Authorization: Bearer abcdefghijklmnop\n" + cleanText
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(text)
	}
}

func TestRedactMasksMoreTokenShapes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url password", "dial postgres://app:s3cr3t-pw@db.internal:5432/app failed", "dial postgres://app:[REDACTED]@db.internal:5432/app failed"},
		{"url short password", "https://u:pw@example.com/x", "https://u:[REDACTED]@example.com/x"},
		{"url without password", "https://user@example.com/x and https://example.com/a:b", "https://user@example.com/x and https://example.com/a:b"},
		{"jwt", "token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.SflKxwRJSMeKKF2QT4fwpM", "token=[REDACTED]"},
		{"private key block", "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\ny", "x\n[REDACTED]\ny"},
		{"unterminated private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "[REDACTED]"},
		{"stripe key", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [REDACTED]"},
		{"gitlab token", "glpat-Ab12Cd34Ef56Gh78Ij90", "[REDACTED]"},
		{"google key", "key AIzaSyA1234567890abcdefghijklmnopqrstuv", "key [REDACTED]"},
		{"after a json newline escape", `{"out": "line\nsk-proj-Ab3dEf9hIjKlMnOpQrStUv\n"}`, `{"out": "line\n[REDACTED]\n"}`},
	}
	r := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactMasksOverlappingSecretsWhole(t *testing.T) {
	r := New(Options{Secrets: []string{"abc12345", "c12345zzzzzz"}})
	if got, want := r.Redact("x abc12345zzzzzz y"), "x [REDACTED] y"; got != want {
		t.Errorf("got %q, want %q: the second secret's tail shows", got, want)
	}
}

// oneMB is a megabyte of tool output with a configured secret, a token and
// the home directory near its end, the worst place for a scan.
var oneMB = func() string {
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString(cleanText)
	}
	b.WriteString("leaked a-configured-secret-value and sk-proj-Ab3dEf9hIjKlMnOpQrStUv in /home/ann/.netrc\n")
	return b.String()
}()

func BenchmarkRedact1MB(b *testing.B) {
	b.Run("secrets", func(b *testing.B) { benchmarkRedact1MB(b, oneMB) })
	// The common case: nothing to remove, the text returned as it is.
	b.Run("clean", func(b *testing.B) { benchmarkRedact1MB(b, oneMB[:strings.LastIndexByte(oneMB[:len(oneMB)-1], '\n')+1]) })
}

func benchmarkRedact1MB(b *testing.B, text string) {
	secrets := []string{"a-configured-secret-value", "another-secret-value-0123"}
	// A machine's worth of secrets from the environment as well.
	for i := range 20 {
		secrets = append(secrets, fmt.Sprintf("env-secret-%02d-0123456789abcdef", i))
	}
	r := New(Options{Secrets: secrets, Home: "/home/ann", Workspace: "/home/ann/src/proj"})
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if s := r.Redact(text); strings.Contains(s, "a-configured-secret-value") {
			b.Fatal("secret kept")
		}
	}
}
