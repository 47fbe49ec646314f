package fs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tools/fs"
)

// TestHardLinkToEnvIsRefusedByEveryTool: a hard link to .env made
// beforehand is the same file, so no tool shows what it holds.
func TestHardLinkToEnvIsRefusedByEveryTool(t *testing.T) {
	ws, dir := newWorkspace(t, map[string]string{
		".env":   "API_KEY=sk-needle-secret\n",
		"README": "read me, needle\n",
	})
	if err := os.Link(filepath.Join(dir, ".env"), filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("hard links: %v", err)
	}
	if out, err := call(t, fs.ReadFile(ws), args{"path": "notes.txt"}); !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("read_file notes.txt = %q, %v; want refused", out, err)
	} else if strings.Contains(err.Error(), `".env"`) {
		t.Errorf("read_file notes.txt names the denied file: %v", err)
	}
	if out, err := call(t, fs.EditFile(ws), args{"path": "notes.txt", "old_string": "API", "new_string": "X"}); !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("edit_file notes.txt = %q, %v; want refused", out, err)
	}
	for _, s := range searches(t, ws) {
		for _, a := range []args{{"pattern": "needle"}, {"pattern": "needle", "path": "notes.txt"}} {
			out, err := call(t, s.tool, a)
			if strings.Contains(out, "secret") || (err == nil && out != "README:1:read me, needle\n") && a["path"] == nil {
				t.Errorf("%s grep %v showed the secret or more: %q, %v", s.name, a, out, err)
			}
			if a["path"] != nil && !errors.Is(err, sandbox.ErrDenied) {
				t.Errorf("%s grep %v = %q, %v; want refused", s.name, a, out, err)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".env")); string(b) != "API_KEY=sk-needle-secret\n" {
		t.Errorf(".env = %q, changed", b)
	}
}

// TestDeniedNamesAreNotListed: list_dir, glob and grep never print the
// name of a denied file or of a link to one.
func TestDeniedNamesAreNotListed(t *testing.T) {
	ws, _ := newWorkspace(t, map[string]string{
		".env":              "needle\n",
		".env.production":   "needle\n",
		"config/server.pem": "needle\n",
		".ssh/id_ed25519":   "needle\n",
		"env-link":          "->.env",
		"README":            "needle\n",
	})
	denied := []string{".env", "server.pem", ".ssh", "id_ed25519", "env-link"}
	check := func(what, out string, err error) {
		t.Helper()
		for _, name := range denied {
			if strings.Contains(out, name) || (err != nil && strings.Contains(err.Error(), name)) {
				t.Errorf("%s lists %s: %q, %v", what, name, out, err)
			}
		}
	}
	for _, p := range []string{".", "config"} {
		out, err := call(t, fs.ListDir(ws), args{"path": p})
		check("list_dir "+p, out, err)
	}
	for _, pattern := range []string{"*", "**", ".*", "**/*.pem", "config/*", "env-link", "**/id_*"} {
		out, err := call(t, fs.Glob(ws), args{"pattern": pattern})
		if strings.HasPrefix(out, "no paths match") {
			out = "" // the pattern echoed
		}
		check("glob "+pattern, out, err)
	}
	for _, s := range searches(t, ws) {
		out, err := call(t, s.tool, args{"pattern": "needle"})
		check(s.name+" grep", out, err)
	}
	if out, _ := call(t, fs.ListDir(ws), args{"path": "."}); !strings.Contains(out, "README") || !strings.Contains(out, "(2 entries)") {
		t.Errorf("list_dir . = %q, want README and config only", out)
	}
}

// TestWriteToolsNeverWriteGit: write_file and edit_file refuse git's
// metadata, existing or not, and create nothing there.
func TestWriteToolsNeverWriteGit(t *testing.T) {
	ws, dir := newWorkspace(t, map[string]string{
		".git/HEAD":   "ref: refs/heads/main\n",
		".git/config": "[core]\n",
		"evil/config": "[core]\n\tfsmonitor = touch pwned\n",
	})
	before := snapshot(t, dir)
	for _, p := range []string{".git/commondir", ".git/hooks/pre-commit", ".git/config", ".git/objects/info/alternates", "sub/.git", ".Git/config"} {
		if out, err := call(t, fs.WriteFile(ws), args{"path": p, "content": "../evil\n"}); !errors.Is(err, sandbox.ErrDenied) {
			t.Errorf("write_file %s = %q, %v; want refused", p, out, err)
		}
	}
	if out, err := call(t, fs.EditFile(ws), args{"path": ".git/HEAD", "old_string": "main", "new_string": "evil"}); !errors.Is(err, sandbox.ErrDenied) {
		t.Errorf("edit_file .git/HEAD = %q, %v; want refused", out, err)
	}
	if after := snapshot(t, dir); !mapsEqualStr(before, after) {
		t.Errorf("refused writes changed the workspace:\n%v\n%v", before, after)
	}
}

func mapsEqualStr(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestGrepMemoryIsBoundedOnHugeLines: a file of one huge line is searched
// in bounded memory by both searches (ripgrep's JSON holds the line whole;
// the Go search read the whole file), with the same answer.
func TestGrepMemoryIsBoundedOnHugeLines(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 9 MB file")
	}
	const size = 9 << 20
	line := bytes.Repeat([]byte("a"), size)
	copy(line[size-len("needle"):], "needle")
	ws, dir := newWorkspace(t, map[string]string{"small.txt": "needle here\n"})
	if err := os.WriteFile(filepath.Join(dir, "huge.txt"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "huge.txt:1:" + strings.Repeat("a", 300) + "… [line cut, 9437184 bytes]\nsmall.txt:1:needle here\n"
	for _, s := range searches(t, ws) {
		t.Run(s.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			out, err := call(t, s.tool, args{"pattern": "needle( here)?$"})
			runtime.ReadMemStats(&after)
			if err != nil || out != want {
				t.Errorf("grep = …%q, %v; want …%q", out[max(0, len(out)-120):], err, want[len(want)-120:])
			}
			// The Go search holds at most a buffer (1 MB) per file being
			// searched, here two.
			const limit = 4 << 20
			if got := after.TotalAlloc - before.TotalAlloc; got > limit {
				t.Errorf("grep allocated %d bytes for a %d-byte line; want at most %d", got, size, limit)
			}
			out, err = call(t, s.tool, args{"pattern": "b"})
			if err != nil || out != "no lines match \"b\"\n" {
				t.Errorf("grep b = %.200q, %v", out, err)
			}
		})
	}
}

// TestGrepRefusesAnExplicitFileOverTheCap: ripgrep's --max-filesize does
// not apply to a file named on its command line, so a huge file named by
// the model was read whole (880 MB for 150 MB).
func TestGrepRefusesAnExplicitFileOverTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 11 MB file")
	}
	ws, dir := newWorkspace(t, nil)
	big := bytes.Repeat([]byte("needle "), (11<<20)/7)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range searches(t, ws) {
		out, err := call(t, s.tool, args{"pattern": "needle", "path": "big.txt"})
		if err == nil || !strings.Contains(err.Error(), "at most 10 MB") {
			t.Errorf("%s grep big.txt = %.200q, %v; want refused over the size cap", s.name, out, err)
		}
	}
}

// TestGrepLongLinesMatchExactly: lines longer than the Go search's buffer
// are matched whole (a string cut between two pieces, anchors, case), and
// the lines after them keep their numbers, in both searches.
func TestGrepLongLinesMatchExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 6 MB file")
	}
	long := func(n int, at int, s string) string {
		b := bytes.Repeat([]byte("a"), n)
		if s != "" {
			copy(b[at:], s)
		}
		return string(b)
	}
	lines := []string{
		"short needle",
		long(3<<20, 1<<20-3, "needle"), // across the first piece's end
		"between",
		long(2<<20, 0, ""),
		long(1<<20+10, 1<<20+4, "NEEDLE"),
		"needle at the end",
	}
	ws, dir := newWorkspace(t, nil)
	if err := os.WriteFile(filepath.Join(dir, "long.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"needle", "(?i)needle", "ne+dle", "^a+$", "^short", "end$", "b"} {
		re := regexp.MustCompile(pattern)
		var want strings.Builder
		for i, l := range lines {
			if !re.MatchString(l) {
				continue
			}
			text := l
			if len(l) > 300 {
				text = fmt.Sprintf("%s… [line cut, %d bytes]", l[:300], len(l))
			}
			fmt.Fprintf(&want, "long.txt:%d:%s\n", i+1, text)
		}
		if want.Len() == 0 {
			fmt.Fprintf(&want, "no lines match %q\n", pattern)
		}
		for _, s := range searches(t, ws) {
			out, err := call(t, s.tool, args{"pattern": pattern})
			if err != nil || out != want.String() {
				t.Errorf("%s grep %q = %.300q, %v; want %.300q", s.name, pattern, out, err, want.String())
			}
		}
	}
}
