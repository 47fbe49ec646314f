package fs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

func TestGlob(t *testing.T) {
	ws, _ := newWorkspace(t, map[string]string{
		"main.go":         "",
		"lib/a.go":        "",
		"lib/deep/b.go":   "",
		"lib/c.txt":       "",
		".git/HEAD":       "",
		".git/x.go":       "",
		"web/app.ts":      "",
		"web/app.tsx":     "",
		"linkdir":         "->lib",
		"out":             "->../outside",
		"empty/":          "",
		"many/":           "",
		"lib/deep/z.json": "",
	})
	tests := []struct {
		name    string
		args    args
		want    string
		wantErr string
	}{
		{name: "any depth", args: args{"pattern": "**/*.go"}, want: "lib/a.go\nlib/deep/b.go\nmain.go\n"},
		{name: "one level", args: args{"pattern": "*.go"}, want: "main.go\n"},
		{name: "directories end with a slash", args: args{"pattern": "*/"}, want: "empty/\nlib/\nmany/\nweb/\n"},
		{name: "alternatives", args: args{"pattern": "web/*.{ts,tsx}"}, want: "web/app.ts\nweb/app.tsx\n"},
		{name: "relative to path", args: args{"pattern": "**/*.go", "path": "lib"}, want: "lib/a.go\nlib/deep/b.go\n"},
		{name: ".git when named", args: args{"pattern": ".git/*"}, want: ".git/HEAD\n.git/x.go\n"},
		{name: "links are not followed", args: args{"pattern": "**/*.json"}, want: "lib/deep/z.json\n"},
		{name: "no match", args: args{"pattern": "**/*.rs"}, want: "no paths match \"**/*.rs\" in ./\n"},
		{name: "absolute pattern", args: args{"pattern": "/etc/*"}, wantErr: "must be relative"},
		{name: "climbing pattern", args: args{"pattern": "../*"}, wantErr: "must not contain .."},
		{name: "bad pattern", args: args{"pattern": "[a"}, wantErr: "not a valid glob"},
		{name: "path is a file", args: args{"pattern": "*", "path": "main.go"}, wantErr: "path must be a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, fs.Glob(ws), tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestGlobCaps(t *testing.T) {
	files := map[string]string{}
	for i := range 510 {
		files["many/f"+itoa(1000+i)] = ""
	}
	ws, _ := newWorkspace(t, files)
	got, err := call(t, fs.Glob(ws), args{"pattern": "many/*"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "many/f1499\n(500 of 510 paths shown; narrow the pattern or path)\n"; got[len(got)-len(want):] != want {
		t.Errorf("end of output = %q, want %q", got[len(got)-80:], want)
	}
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name    string
		args    args
		want    string
		wantErr string
		file    string // path whose content is checked
		content string
	}{
		{name: "creates with parents", args: args{"path": "a/b/c.txt", "content": "x\ny\n"},
			want: "created a/b/c.txt (2 lines, 4 bytes)", file: "a/b/c.txt", content: "x\ny\n"},
		{name: "replaces", args: args{"path": "old.txt", "content": "new"},
			want: "replaced old.txt (was 8 bytes; now 1 lines, 3 bytes)", file: "old.txt", content: "new"},
		{name: "empty content", args: args{"path": "e.txt", "content": ""}, want: "created e.txt (0 lines, 0 bytes)", file: "e.txt", content: ""},
		{name: "through a link inside", args: args{"path": "in/x.txt", "content": "x"}, want: "created in/x.txt (1 lines, 1 bytes)", file: "sub/x.txt", content: "x"},
		{name: "absolute path inside", args: args{"path": "{dir}/abs.txt", "content": "x"}, want: "created abs.txt (1 lines, 1 bytes)", file: "abs.txt", content: "x"},
		{name: "directory refused", args: args{"path": "sub", "content": "x"}, wantErr: `"sub" is a directory`},
		{name: "root refused", args: args{"path": ".", "content": "x"}, wantErr: "path is empty or the workspace root"},
		{name: "parent is a file", args: args{"path": "old.txt/x", "content": "x"}, wantErr: `a parent of "old.txt/x" is a file, not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := newWorkspace(t, map[string]string{"old.txt": "old text", "sub/": "", "in": "->sub"})
			if p, ok := tt.args["path"].(string); ok && len(p) > 5 && p[:5] == "{dir}" {
				tt.args["path"] = dir + p[5:]
			}
			before := snapshot(t, dir)
			got, err := call(t, fs.WriteFile(ws), tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
			if tt.wantErr != "" {
				if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
					t.Errorf("a refused write changed the workspace: %v", after)
				}
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil || string(b) != tt.content {
				t.Errorf("%s = %q, %v; want %q", tt.file, b, err, tt.content)
			}
		})
	}
}

// write_file over an existing file gives the UIs the diff of the change in
// its Meta (the model's text stays the one-line summary); a new file, a
// binary one and an unchanged one give none, and a long diff is cut.
func TestWriteFileReplacingGivesTheDiffInMeta(t *testing.T) {
	big := strings.Repeat("line\n", 30000)
	tests := []struct {
		name     string
		old      string // "" : no file
		content  string
		want     string // in the diff; "" for no Meta
		wantText string
	}{
		{"replaced", "a\nb\nc\n", "a\nB\nc\n", "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "replaced f.txt (was 6 bytes; now 3 lines, 6 bytes)"},
		{"created", "", "x\n", "", "created f.txt"},
		{"unchanged", "same\n", "same\n", "", "replaced f.txt"},
		{"binary", "\x00\x01", "text\n", "", "replaced f.txt"},
		{"cut", strings.Repeat("old\n", 10000), strings.Repeat("new\n", 10000), "… (diff cut: ", "replaced f.txt"},
		{"too large to diff", big + "x\n", big, "", "replaced f.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.old != "" {
				files["f.txt"] = tc.old
			}
			ws, _ := newWorkspace(t, files)
			raw, _ := json.Marshal(args{"path": "f.txt", "content": tc.content})
			out, err := fs.WriteFile(ws).Run(context.Background(), tool.Call{Args: raw})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.Text, tc.wantText) || strings.Contains(out.Text, "---") {
				t.Errorf("text = %q, want it to start %q and hold no diff", out.Text, tc.wantText)
			}
			if tc.want == "" {
				if out.Meta != nil {
					t.Errorf("meta = %s, want none", out.Meta)
				}
				return
			}
			var m fs.WriteMeta
			if err := json.Unmarshal(out.Meta, &m); err != nil {
				t.Fatalf("meta %s: %v", out.Meta, err)
			}
			if !strings.Contains(m.Diff, tc.want) || len(m.Diff) > 33<<10 {
				t.Errorf("diff (%d bytes) lacks %q:\n%.300s", len(m.Diff), tc.want, m.Diff)
			}
		})
	}
}
