package fs_test

import (
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

// newWorkspace makes a workspace holding files (path → content; a content
// starting with "->" makes a link to the rest) beside a directory
// "outside" that holds a secret.
func newWorkspace(t testing.TB, files map[string]string) (*sandbox.Workspace, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "secret"), []byte("SECRET needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir
}

// call runs t with args marshalled to JSON.
func call(tb testing.TB, t tool.Tool, args any) (string, error) {
	tb.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := t.Run(context.Background(), tool.Call{Name: t.Spec().Name, Args: raw})
	return out.Text, err
}

type args = map[string]any

// snapshot returns every file under dir with its content, to show that a
// refused call changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "->" + target
		case d.IsDir():
			m[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToolSets(t *testing.T) {
	ws, _ := newWorkspace(t, nil)
	names := func(ts []tool.Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Spec().Name)
		}
		return out
	}
	if got, want := names(fs.ReadOnlyTools(ws)), []string{"list_dir", "read_file", "glob", "grep"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReadOnlyTools = %v, want %v", got, want)
	}
	if got, want := names(fs.Tools(ws)), []string{"list_dir", "read_file", "glob", "grep", "write_file", "edit_file"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tools = %v, want %v", got, want)
	}
	for _, tl := range fs.Tools(ws) {
		s := tl.Spec()
		want := tool.ReadOnly
		if s.Name == "write_file" || s.Name == "edit_file" {
			want = tool.Mutating
		}
		if s.Access != want {
			t.Errorf("%s access = %v, want %v", s.Name, s.Access, want)
		}
		if s.Description == "" || len(s.Schema) == 0 {
			t.Errorf("%s has no description or schema", s.Name)
		}
	}
}

func TestKeys(t *testing.T) {
	ws, _ := newWorkspace(t, nil)
	byName := map[string]tool.Tool{}
	for _, tl := range fs.Tools(ws) {
		byName[tl.Spec().Name] = tl
	}
	tests := []struct {
		tool string
		args string
		want tool.Keys
	}{
		{"read_file", `{"path":"./src/../a.go"}`, tool.Keys{Reads: []string{"file:a.go"}}},
		{"write_file", `{"path":"src//b.go","content":""}`, tool.Keys{Writes: []string{"file:src/b.go", "files"}}},
		{"edit_file", `{"path":"src/b.go","old_string":"x"}`, tool.Keys{Writes: []string{"file:src/b.go", "files"}}},
		{"write_file", `{"path":"../x","content":""}`, tool.Keys{Writes: []string{"files"}}},
		{"grep", `{"pattern":"x"}`, tool.Keys{Reads: []string{"files"}}},
		{"glob", `{"pattern":"*"}`, tool.Keys{Reads: []string{"files"}}},
		{"list_dir", `{}`, tool.Keys{Reads: []string{"files"}}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			if got := tool.KeysOf(byName[tt.tool], json.RawMessage(tt.args)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("keys = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestEscapesAreRefusedByEveryTool sends every tool paths that lead out of
// the workspace and checks each is refused with ErrEscape and that nothing
// inside or outside changed.
func TestEscapesAreRefusedByEveryTool(t *testing.T) {
	ws, dir := newWorkspace(t, map[string]string{
		"a.txt":   "needle\n",
		"out":     "->../outside",
		"outfile": "->../outside/secret",
	})
	outside := filepath.Join(filepath.Dir(dir), "outside")
	before, beforeOut := snapshot(t, dir), snapshot(t, outside)
	paths := []string{"../outside/secret", "/etc/passwd", filepath.Join(outside, "secret"), "out/secret", "outfile"}
	dirPaths := []string{"..", "/etc", outside, "out"}
	byName := map[string]tool.Tool{}
	for _, tl := range fs.Tools(ws) {
		byName[tl.Spec().Name] = tl
	}
	type attempt struct {
		tool string
		args args
	}
	var attempts []attempt
	for _, p := range paths {
		attempts = append(attempts,
			attempt{"read_file", args{"path": p}},
			attempt{"write_file", args{"path": p, "content": "pwned"}},
			attempt{"edit_file", args{"path": p, "old_string": "SECRET", "new_string": "pwned"}},
			attempt{"edit_file", args{"path": p, "patch": "@@ -1 +1 @@\n-SECRET needle\n+pwned\n"}},
			attempt{"grep", args{"pattern": "needle", "path": p}},
		)
	}
	for _, p := range dirPaths {
		attempts = append(attempts,
			attempt{"list_dir", args{"path": p}},
			attempt{"glob", args{"pattern": "*", "path": p}},
			attempt{"grep", args{"pattern": "needle", "path": p}},
			attempt{"write_file", args{"path": p + "/new.txt", "content": "pwned"}},
		)
	}
	for _, a := range attempts {
		name, _ := json.Marshal(a.args)
		t.Run(a.tool+string(name), func(t *testing.T) {
			out, err := call(t, byName[a.tool], a.args)
			if !errors.Is(err, sandbox.ErrEscape) {
				t.Errorf("%s = %q, %v; want ErrEscape", a.tool, out, err)
			}
		})
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("workspace changed:\n%v\nwant\n%v", after, before)
	}
	if after := snapshot(t, outside); !reflect.DeepEqual(after, beforeOut) {
		t.Errorf("outside changed:\n%v\nwant\n%v", after, beforeOut)
	}
}
