package scripted

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// secret stands for the contents of a file that whoever named it may not
// read (a key, a token): no error of the script's may quote it.
const secret = "S3CR3T-7f3a9c"

// TestScriptErrorsNeverQuoteTheFile: a script's path may come from someone
// who cannot read the file (a server's client did); each error names the
// file and the line, and never quotes what the file holds.
func TestScriptErrorsNeverQuoteTheFile(t *testing.T) {
	tests := []struct{ name, src string }{
		{"a private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret + "AAAAB3NzaC1yc2E\n-----END OPENSSH PRIVATE KEY-----\n"},
		{"an env file", secret + "=hunter2\n"},
		{"a field name", secret + ": 1\n"},
		{"a field in a round", "rounds:\n  - " + secret + ": 1\n"},
		{"a string for a list", "rounds: " + secret + "\n"},
		{"a string for an integer", "rounds:\n  - chunk: " + secret + "\n"},
		{"a string for a duration", "rounds:\n  - delay: " + secret + "\n"},
		{"a finish", "rounds:\n  - finish: " + secret + "\n"},
		{"an error kind", "rounds:\n  - error: {kind: " + secret + "}\n"},
		{"a phase", "rounds:\n  - expect: [{phase: " + secret + "}]\n"},
		{"a tool choice", "rounds:\n  - expect: [{tool_choice: " + secret + "}]\n"},
		{"a result status", "rounds:\n  - expect: [{result: {status: " + secret + "}}]\n"},
		{"args as text", "rounds:\n  - calls:\n      - name: f\n        args: " + secret + "\n"},
		{"a bad boolean", "rounds:\n  - calls:\n      - name: f\n        args: {a: !!bool " + secret + "}\n"},
		{"a bad number", "rounds:\n  - calls:\n      - name: f\n        args: {a: !!float " + secret + "}\n"},
		{"a call id used twice", "rounds:\n  - calls: [{name: f, id: " + secret + "}]\n  - calls: [{name: f, id: " + secret + "}]\n"},
		{"an unknown anchor", "rounds: *" + secret + "\n"},
		{"a YAML syntax error", "rounds: [\"" + secret + "\n"},
		{"invalid JSON", "{\"rounds\": " + secret + "}\n"},
		{"invalid JSON after a string", "{\"" + secret + "\": \"" + secret + "\" " + secret + "}\n"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadScript(path)
			if err == nil {
				t.Fatalf("%q parsed as a script", tt.src)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path+": ") {
				t.Errorf("the error does not name the file first: %s", msg)
			}
			// Parts of it count: "S3CR3T", "7f3a9c".
			for _, part := range []string{secret, "S3CR3T", "7f3a9c", "hunter2", "AAAAB3"} {
				if strings.Contains(msg, part) {
					t.Errorf("the error quotes the file (%q): %s", part, msg)
				}
			}
		})
	}
}

// TestLoadScriptReadsOnlyARegularFile: a device or a pipe named as a
// script must not read for ever or block.
func TestLoadScriptReadsOnlyARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no fifo: %v", err)
	}
	for _, path := range []string{"/dev/zero", "/dev/urandom", fifo, t.TempDir()} {
		done := make(chan error, 1)
		go func() { _, err := LoadScript(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("LoadScript(%s) = %v, want it refused as not a regular file", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadScript(%s) did not return", path)
		}
	}
}
