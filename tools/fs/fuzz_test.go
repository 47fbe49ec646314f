package fs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tools/fs"
)

// FuzzEditFile checks edit_file's string replacement with any path and
// text: it never panics, never touches anything outside the workspace, and
// either makes exactly the one replacement asked for or changes nothing.
func FuzzEditFile(f *testing.F) {
	seeds := []struct{ path, content, old, new string }{
		{"f.txt", "hello world\n", "world", "there"},
		{"f.txt", "a\nb\na\n", "a", "c"},
		{"f.txt", "no newline", "line", "\n\n"},
		{"f.txt", "x", "x", ""},
		{"f.txt", "", "", "new"},
		{"../outside/secret", "", "SECRET", "pwned"},
		{"/etc/passwd", "", "root", "x"},
		{"out/secret", "", "SECRET", "pwned"},
		{"./sub/../f.txt", "\r\n\r\n", "\r\n", "\n"},
		{"f.txt", "\x00binary", "binary", "text"},
		{"f.txt", "ünï ✓\n", "✓", "\xff"},
	}
	for _, s := range seeds {
		f.Add(s.path, s.content, s.old, s.new)
	}
	f.Fuzz(func(t *testing.T, path, content, old, new string) {
		// Arguments reach the tool as JSON, which holds only valid UTF-8.
		old, new = viaJSON(old), viaJSON(new)
		base := t.TempDir()
		dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
		for _, d := range []string{filepath.Join(dir, "sub"), outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../outside", filepath.Join(dir, "out")); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, err := sandbox.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		before := snapshot(t, base)

		_, err = call(t, fs.EditFile(ws), args{"path": path, "old_string": old, "new_string": new})

		after := snapshot(t, base)
		if got := after[filepath.Join("outside", "secret")]; got != "SECRET" {
			t.Fatalf("outside secret = %q", got)
		}
		delete(before, filepath.Join("ws", "f.txt"))
		changed := after[filepath.Join("ws", "f.txt")]
		delete(after, filepath.Join("ws", "f.txt"))
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("files other than f.txt changed:\n%v\nwant\n%v", after, before)
		}
		if err != nil {
			if changed != content {
				t.Fatalf("failed edit (%v) changed f.txt to %q", err, changed)
			}
			return
		}
		if strings.Count(content, old) != 1 || changed != strings.Replace(content, old, new, 1) {
			t.Fatalf("edit of %q: %q → %q made %q", content, old, new, changed)
		}
	})
}

func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
