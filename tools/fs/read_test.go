package fs_test

import (
	"errors"
	iofs "io/fs"
	"strings"
	"testing"

	"github.com/reinhq/rein/tools/fs"
)

func TestListDir(t *testing.T) {
	ws, _ := newWorkspace(t, map[string]string{
		"b.txt":        "hello",
		"a/x.go":       "package a\n",
		"link":         "->a/x.go",
		".hidden":      "",
		"empty/":       "",
		"a/deep/y.txt": "y",
	})
	tests := []struct {
		name    string
		args    args
		want    string
		wantErr string
	}{
		{name: "root sorted with types and sizes", args: args{}, want: "./ (5 entries)\n" +
			"file  .hidden (0 bytes)\n" +
			"dir   a/\n" +
			"file  b.txt (5 bytes)\n" +
			"dir   empty/\n" +
			"link  link -> a/x.go\n"},
		{name: "subdirectory", args: args{"path": "a"}, want: "a/ (2 entries)\ndir   deep/\nfile  x.go (10 bytes)\n"},
		{name: "empty directory", args: args{"path": "empty/"}, want: "empty/ (0 entries)\n"},
		{name: "a file is refused", args: args{"path": "b.txt"}, wantErr: `"b.txt" is a file, not a directory; use read_file`},
		{name: "missing", args: args{"path": "nope"}, wantErr: `no file or directory "nope" in the workspace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, fs.ListDir(ws), tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestListDirCapsEntries(t *testing.T) {
	files := map[string]string{}
	for i := range 1005 {
		files["d/"+strings.Repeat("f", 1+i%7)+string(rune('a'+i%26))+itoa(i)] = ""
	}
	ws, _ := newWorkspace(t, files)
	got, err := call(t, fs.ListDir(ws), args{"path": "d"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "\nfile  "); n != 1000 {
		t.Errorf("listed %d entries, want 1000", n)
	}
	if !strings.HasSuffix(got, "… 5 more entries not shown; use glob to narrow\n") {
		t.Errorf("no cap notice: %q", got[len(got)-80:])
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func checkResult(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("err = %v, want one saying %q (output %q)", err, wantErr, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadFile(t *testing.T) {
	long := strings.Repeat("é", 1500) // 3000 bytes
	ws, _ := newWorkspace(t, map[string]string{
		"five.txt":  "one\ntwo\nthree\nfour\nfive\n",
		"noeol.txt": "a\nb",
		"crlf.txt":  "a\r\nb\r\n",
		"empty.txt": "",
		"long.txt":  long + "\nshort\n",
		"bin.png":   "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"latin.txt": "caf\xe9 au lait\n",
		"dir/x":     "",
	})
	tests := []struct {
		name    string
		args    args
		want    string
		wantErr string
	}{
		{name: "whole file numbered", args: args{"path": "five.txt"},
			want: "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n"},
		{name: "offset and limit", args: args{"path": "five.txt", "offset": 2, "limit": 2},
			want: "     2\ttwo\n     3\tthree\n(lines 2-3 of 5 shown; continue with offset=4)\n"},
		{name: "offset to the end", args: args{"path": "five.txt", "offset": 4},
			want: "     4\tfour\n     5\tfive\n(lines 4-5 of 5 shown; end of file)\n"},
		{name: "limit from the start", args: args{"path": "five.txt", "limit": 1},
			want: "     1\tone\n(lines 1-1 of 5 shown; continue with offset=2)\n"},
		{name: "last line without line end", args: args{"path": "noeol.txt"}, want: "     1\ta\n     2\tb\n"},
		{name: "CRLF line ends removed", args: args{"path": "crlf.txt"}, want: "     1\ta\n     2\tb\n"},
		{name: "empty file", args: args{"path": "empty.txt"}, want: "empty.txt is empty (0 lines)."},
		{name: "long line cut at a rune boundary", args: args{"path": "long.txt"},
			want: "     1\t" + strings.Repeat("é", 1000) + "… [line cut, 3000 bytes]\n     2\tshort\n"},
		{name: "invalid UTF-8 shown with replacement", args: args{"path": "latin.txt"}, want: "     1\tcaf\uFFFD au lait\n"},
		{name: "offset past the end", args: args{"path": "five.txt", "offset": 9}, wantErr: "offset 9 is past the end of \"five.txt\", which has 5 lines"},
		{name: "negative offset", args: args{"path": "five.txt", "offset": -1}, wantErr: "must not be negative"},
		{name: "binary refused", args: args{"path": "bin.png"}, wantErr: `"bin.png" is a binary file (image/png, 16 bytes)`},
		{name: "directory refused", args: args{"path": "dir"}, wantErr: `"dir" is a directory; use list_dir`},
		{name: "missing", args: args{"path": "nope.txt"}, wantErr: `no file or directory "nope.txt" in the workspace; list_dir or glob shows what exists`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, fs.ReadFile(ws), tt.args)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestReadFileMissingWrapsNotExist(t *testing.T) {
	ws, _ := newWorkspace(t, nil)
	_, err := call(t, fs.ReadFile(ws), args{"path": "nope"})
	if !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("err = %v, want one matching fs.ErrNotExist", err)
	}
}

func TestReadFileCapsOutput(t *testing.T) {
	line := strings.Repeat("x", 199) + "\n"
	ws, _ := newWorkspace(t, map[string]string{"big.txt": strings.Repeat(line, 3000)})
	got, err := call(t, fs.ReadFile(ws), args{"path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 101<<10 {
		t.Errorf("output is %d bytes, want at most about 100 KB", len(got))
	}
	if !strings.Contains(got, "(output capped at 100 KB: lines 1-") || !strings.Contains(got, " of 3000 shown; continue with offset=") {
		t.Errorf("no cap notice: %q", got[len(got)-120:])
	}
}
