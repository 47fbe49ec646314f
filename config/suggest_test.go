package config

import (
	"strings"
	"testing"
)

func TestUnknownSettingSuggestsTheClosestKey(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"top level", `modle = "openai:gpt-5"`, "unknown setting modle (did you mean model?)"},
		{"provider table", "[providers.x]\nprotocol = \"openai\"\nbase_ur = \"http://x\"", "unknown setting providers.x.base_ur (did you mean providers.x.base_url?)"},
		{"embedded request setting", "[models.\"openai:gpt-5\"]\nreasoning_efort = \"low\"", `unknown setting models."openai:gpt-5".reasoning_efort (did you mean models.openai:gpt-5.reasoning_effort?)`},
		{"mcp server", "[mcp.servers.fs]\ncomand = \"x\"", "unknown setting mcp.servers.fs.comand (did you mean mcp.servers.fs.command?)"},
		{"nothing close", `wibble = 1`, "unknown setting wibble"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v; want it to say %q", err, tc.want)
			}
			if tc.name == "nothing close" && strings.Contains(err.Error(), "did you mean") {
				t.Fatalf("Parse: %v; suggested a key that is not close", err)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	known := []string{"model", "workspace", "max-rounds"}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"modle", "model", true},
		{"workspce", "workspace", true},
		{"max-round", "max-rounds", true},
		{"model", "", false},
		{"xyz", "", false},
	} {
		got, ok := Closest(tc.in, known)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
