package config

import (
	"strings"
	"testing"
	"time"
)

func TestStreamTable(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		out, args int64
		wantErr   string
	}{
		{"absent keeps the defaults", "", 0, 0, ""},
		{"sizes", "[stream]\nmax_round_output = \"16MiB\"\nmax_call_arguments = 4096\n", 16 << 20, 4096, ""},
		{"none", "[stream]\nmax_round_output = \"none\"\nmax_call_arguments = -1\n", NoLimit, NoLimit, ""},
		{"zero", "[stream]\nmax_round_output = 0\n", 0, 0, "stream: max_round_output 0: 0 allows nothing"},
		{"not a size", "[stream]\nmax_call_arguments = \"lots\"\n", 0, 0, "stream: max_call_arguments \"lots\": want a size"},
		{"unknown", "[stream]\nmax_text = \"1MiB\"\n", 0, 0, "unknown setting stream.max_text"},
		{"not a table", "stream = 3\n", 0, 0, "stream: want a table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Stream.MaxRoundOutput != tt.out || f.Stream.MaxCallArguments != tt.args {
				t.Errorf("got %d, %d; want %d, %d", f.Stream.MaxRoundOutput, f.Stream.MaxCallArguments, tt.out, tt.args)
			}
		})
	}
}

func TestIdleTimeout(t *testing.T) {
	f, err := Parse("[providers.local]\nprotocol = \"anthropic\"\nidle_timeout = \"90s\"\n[models.\"openai:*\"]\nidle_timeout = \"10m\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Providers["local"].IdleTimeout; d == nil || *d != 90*time.Second {
		t.Errorf("providers.local idle_timeout = %v, want 90s", d)
	}
	if d := f.Models["openai:*"].IdleTimeout; d == nil || *d != 10*time.Minute {
		t.Errorf("models openai:* idle_timeout = %v, want 10m", d)
	}
	for _, bad := range []string{`"0s"`, `"-1m"`, `"soon"`} {
		if _, err := Parse("[providers.local]\nprotocol = \"anthropic\"\nidle_timeout = " + bad + "\n"); err == nil || !strings.Contains(err.Error(), "idle_timeout") {
			t.Errorf("idle_timeout = %s: err = %v, want an error naming idle_timeout", bad, err)
		}
	}
}
