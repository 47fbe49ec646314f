package fs_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/tools/fs"
)

const letters = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"

func TestEditFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string // content of f.txt before
		args    args   // path defaults to f.txt
		want    string // output
		after   string // content of f.txt after; "" means unchanged
		wantErr string
	}{
		{
			name: "unique replacement with its diff",
			file: letters, args: args{"old_string": "c\n", "new_string": "C\nC2\n"},
			want:  "edited f.txt: replaced 1 occurrence at line 3\n--- a/f.txt\n+++ b/f.txt\n@@ -1,6 +1,7 @@\n a\n b\n-c\n+C\n+C2\n d\n e\n f\n",
			after: "a\nb\nC\nC2\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n",
		},
		{
			name: "replacement inside a line",
			file: "x := 1\ny := 2\n", args: args{"old_string": "y := 2", "new_string": "y := 3"},
			want:  "edited f.txt: replaced 1 occurrence at line 2\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n x := 1\n-y := 2\n+y := 3\n",
			after: "x := 1\ny := 3\n",
		},
		{
			name: "deleting lines",
			file: letters, args: args{"old_string": "l\nm\n", "new_string": ""},
			want:  "edited f.txt: replaced 1 occurrence at line 12\n--- a/f.txt\n+++ b/f.txt\n@@ -9,5 +9,3 @@\n i\n j\n k\n-l\n-m\n",
			after: "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n",
		},
		{
			name: "last line without line end",
			file: "one\ntwo", args: args{"old_string": "two", "new_string": "2"},
			want:  "edited f.txt: replaced 1 occurrence at line 2\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+2\n\\ No newline at end of file\n",
			after: "one\n2",
		},
		{
			name: "replace_all with separate hunks",
			file: "x\n" + letters + "x\n", args: args{"old_string": "x", "new_string": "y", "replace_all": true},
			want:  "edited f.txt: replaced 2 occurrences\n--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-x\n+y\n a\n b\n c\n@@ -12,4 +12,4 @@\n k\n l\n m\n-x\n+y\n",
			after: "y\n" + letters + "y\n",
		},
		{
			name: "two matches on one line make one change",
			file: "x x\n", args: args{"old_string": "x", "new_string": "yy", "replace_all": true},
			want:  "edited f.txt: replaced 2 occurrences\n--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-x x\n+yy yy\n",
			after: "yy yy\n",
		},
		{
			name: "patch with wrong line numbers and a lost context space",
			file: letters, args: args{"patch": "--- a/f.txt\n+++ b/f.txt\n@@ -40,4 +40,4 @@\n f\n\n-g\n+G\n h\n"},
			wantErr: "hunk 1 (@@ -40,4 +40,4 @@) does not match the file",
		},
		{
			name: "patch placed by its context",
			file: letters, args: args{"patch": "@@ -40,3 +40,3 @@\n f\n-g\n+G\n h\n"},
			want:  "edited f.txt: applied 1 hunks (+1 -1 lines)\n--- a/f.txt\n+++ b/f.txt\n@@ -6,3 +6,3 @@\n f\n-g\n+G\n h\n",
			after: strings.Replace(letters, "g\n", "G\n", 1),
		},
		{
			name: "patch with two hunks and a header without numbers",
			file: letters, args: args{"patch": "@@ @@\n a\n-b\n+B\n@@ -12,2 +12,3 @@\n l\n+l2\n m\n"},
			want:  "edited f.txt: applied 2 hunks (+2 -1 lines)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -12,2 +12,3 @@\n l\n+l2\n m\n",
			after: "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nl2\nm\n",
		},
		{
			name: "blank context line without its space",
			file: "a\n\nb\n", args: args{"patch": "@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n"},
			want:  "edited f.txt: applied 1 hunks (+1 -1 lines)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n \n-b\n+B\n",
			after: "a\n\nB\n",
		},
		{name: "not found", file: letters, args: args{"old_string": "zz", "new_string": "y"},
			wantErr: "old_string was not found in f.txt; read_file the lines and copy the text exactly"},
		{name: "CRLF hint", file: "a\r\nb\r\n", args: args{"old_string": "a\nb", "new_string": "y"},
			wantErr: "the file uses CRLF line ends"},
		{name: "several matches say how many and where", file: "x\ny\nx\nx\n", args: args{"old_string": "x", "new_string": "z"},
			wantErr: "old_string occurs 3 times in f.txt, at lines 1, 3, 4; include more of the surrounding text to pick one, or set replace_all"},
		{name: "empty old_string", file: letters, args: args{"new_string": "y"}, wantErr: "old_string is empty"},
		{name: "no change", file: letters, args: args{"old_string": "a", "new_string": "a"}, wantErr: "there is nothing to change"},
		{name: "patch and strings", file: letters, args: args{"old_string": "a", "patch": "@@"}, wantErr: "either patch or old_string"},
		{name: "patch not a diff", file: letters, args: args{"patch": "hello"}, wantErr: "patch has no hunks"},
		{name: "patch for two files", file: letters, args: args{"patch": "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+A\n"},
			wantErr: "patch changes 2 files"},
		{name: "patch creating a file", file: letters, args: args{"patch": "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+a\n"},
			wantErr: "edit_file only changes an existing file"},
		{name: "patch placed twice equally near", file: "x\ny\nq\nq\nx\ny\n", args: args{"patch": "@@ -3 +3 @@\n x\n-y\n+Y\n"},
			wantErr: "matches the file in two places"},
		{name: "overlapping hunks", file: letters, args: args{"patch": "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n"},
			wantErr: "overlap"},
		{name: "binary file", file: "\x00\x01\x02", args: args{"old_string": "\x01", "new_string": "x"}, wantErr: "is a binary file"},
		{name: "missing file", file: letters, args: args{"path": "nope.txt", "old_string": "a", "new_string": "b"}, wantErr: `no file or directory "nope.txt"`},
		{name: "directory", file: letters, args: args{"path": "sub", "old_string": "a", "new_string": "b"}, wantErr: `"sub" is a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := newWorkspace(t, map[string]string{"f.txt": tt.file, "sub/": ""})
			if _, ok := tt.args["path"]; !ok {
				tt.args["path"] = "f.txt"
			}
			before := snapshot(t, dir)
			got, err := call(t, fs.EditFile(ws), tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
			if tt.wantErr != "" {
				if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
					t.Errorf("a refused edit changed the workspace: %v", after)
				}
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, "f.txt"))
			if err != nil || string(b) != tt.after {
				t.Errorf("f.txt = %q, %v; want %q", b, err, tt.after)
			}
		})
	}
}

func TestEditFileKeepsMode(t *testing.T) {
	ws, dir := newWorkspace(t, map[string]string{"run.sh": "echo a\n"})
	p := filepath.Join(dir, "run.sh")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, fs.EditFile(ws), args{"path": "run.sh", "old_string": "a", "new_string": "b"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v, %v; want 0755 kept", fi.Mode(), err)
	}
}
