package sources

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
)

func file(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadRefusesWhatItCannotAttach(t *testing.T) {
	dir := t.TempDir()
	ok := file(t, dir, "ok.md", "hello\r\nworld\n")
	tests := []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"binary", file(t, dir, "b.bin", "a\x00b"), "not a text file"},
		{"invalid utf-8", file(t, dir, "l.txt", "caf\xe9"), "not a text file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]string{ok, tc.path})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("err = %v, want %q naming the file", err, tc.want)
			}
		})
	}
	big, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(MaxSize + 1)
	big.Close()
	if _, err := Load([]string{big.Name()}); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("big file: %v", err)
	}
	srcs, err := Load([]string{ok, ok})
	if err != nil || len(srcs) != 2 || srcs[0].ID != "s1" || srcs[1].ID != "s2" || srcs[0].Text != "hello\nworld\n" || srcs[0].Lines != 2 {
		t.Fatalf("sources = %+v, %v", srcs, err)
	}
}

func TestReadSource(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	for range 3000 {
		long.WriteString(strings.Repeat("x", 39) + "\n") // 40 bytes a line
	}
	srcs, err := Load([]string{
		file(t, dir, "a.md", "line one\nline two"),
		file(t, dir, "long.txt", long.String()),
		file(t, dir, "empty.txt", ""),
		file(t, dir, "wide.txt", strings.Repeat("é", PageChars)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := Read(srcs)
	tests := []struct {
		args   string
		want   []string
		failed bool
	}{
		{`{"source_id":"s1"}`, []string{"s1 = " + filepath.ToSlash(filepath.Join(dir, "a.md")) + ", lines 1-2 of 2\n\nline one\nline two"}, false},
		{`{"source_id":"s1","start_line":2}`, []string{"lines 2-2 of 2\n\nline two"}, false},
		{`{"source_id":"s2"}`, []string{"lines 1-1250 of 3000", "[more: call read_source with source_id s2 and start_line 1251]"}, false},
		{`{"source_id":"s2","start_line":2501}`, []string{"lines 2501-3000 of 3000"}, false},
		{`{"source_id":"s3"}`, []string{"is empty"}, false},
		{`{"source_id":"s4"}`, []string{"…[line cut]"}, false},
		{`{"source_id":"s9"}`, []string{`no source "s9"; attached: s1, s2, s3, s4`}, true},
		{`{"source_id":"s1","start_line":3}`, []string{"has lines 1 to 2"}, true},
		{`{"source_id":"s1","start_line":-1}`, []string{"start_line -1"}, true},
	}
	for _, tc := range tests {
		out, err := r.Run(context.Background(), tool.Call{Args: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Failed != tc.failed {
			t.Errorf("read_source %s = %+v", tc.args, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.Text, w) {
				t.Errorf("read_source %s lacks %q:\n%.300s", tc.args, w, out.Text)
			}
		}
		if len(out.Text) > PageChars+500 {
			t.Errorf("read_source %s: %d bytes, more than a page", tc.args, len(out.Text))
		}
		if strings.Contains(tc.args, `"s2"`) && strings.Contains(tc.args, "2501") && strings.Contains(out.Text, "[more") {
			t.Errorf("the last page says there is more")
		}
	}
	if !strings.Contains(r.Spec().Description, "s1 = ") {
		t.Fatalf("description = %s", r.Spec().Description)
	}
	p := Prompt(srcs)
	if !strings.Contains(p, "- s2 = ") || !strings.Contains(p, "(3000 lines)") || Prompt(nil) != "" {
		t.Fatalf("prompt:\n%s", p)
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name    string
		srcs    []Source
		err     error
		on      bool
		wantErr bool
	}{
		{"none", nil, nil, false, false},
		{"some", []Source{{ID: "s1"}}, nil, true, false},
		{"load failed", nil, errors.New("attach x: no such file"), false, true},
	}
	for _, tc := range tests {
		on, err := Gate(tc.srcs, tc.err)(context.Background())
		if on != tc.on || (err != nil) != tc.wantErr {
			t.Errorf("%s: gate = %v, %v", tc.name, on, err)
		}
	}
}
