package fs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

var benchDirs struct {
	sync.Mutex
	all []string
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs.all {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// benchTree returns a workspace of 50,000 small source files (50 × 10
// directories of 100), one in a hundred holding a "needle_N" line, built
// once per process.
var benchTree = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rein-grep-bench-")
	if err != nil {
		return "", err
	}
	benchDirs.Lock()
	benchDirs.all = append(benchDirs.all, dir)
	benchDirs.Unlock()
	var body strings.Builder
	for i := range 30 {
		fmt.Fprintf(&body, "func handler%d(ctx context.Context, req *Request) (*Response, error) { return nil, nil }\n", i)
	}
	n := 0
	for a := range 50 {
		for b := range 10 {
			d := filepath.Join(dir, fmt.Sprintf("pkg%02d", a), fmt.Sprintf("sub%d", b))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
			for c := range 100 {
				content := "package sub\n\n" + body.String()
				if n%100 == 0 {
					content += fmt.Sprintf("var needle_%d = true\n", n)
				}
				if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%03d.go", c)), []byte(content), 0o644); err != nil {
					return "", err
				}
				n++
			}
		}
	}
	return dir, nil
})

func benchRun(b *testing.B, t tool.Tool, a args) string {
	b.Helper()
	raw, _ := json.Marshal(a)
	c := tool.Call{Args: raw}
	ctx := context.Background()
	var out tool.Output
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if out, err = t.Run(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	return out.Text
}

// BenchmarkGrep50k searches 50,000 files for a pattern in 1% of them, with
// the Go search and with ripgrep.
func BenchmarkGrep50k(b *testing.B) {
	dir, err := benchTree()
	if err != nil {
		b.Fatal(err)
	}
	ws, err := sandbox.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	q := args{"pattern": `needle_[0-9]+`, "max_results": 1000}
	want := ""
	for _, s := range searches(b, ws) {
		b.Run(s.name, func(b *testing.B) {
			got := benchRun(b, s.tool, q)
			if n := strings.Count(got, "\n"); n != 500 {
				b.Fatalf("%d matching lines, want 500", n)
			}
			if want != "" && got != want {
				b.Fatal("searches disagree")
			}
			want = got
		})
	}
}

// BenchmarkReadFile10MB reads the first and the last 2,000 lines of a 10 MB
// file.
func BenchmarkReadFile10MB(b *testing.B) {
	line := strings.Repeat("0123456789", 7) + "abcdefghi\n" // 80 bytes
	const lines = 10 << 20 / 80
	ws, _ := newWorkspace(b, map[string]string{"big.txt": strings.Repeat(line, lines)})
	for _, c := range []struct {
		name string
		args args
	}{
		{"head", args{"path": "big.txt"}},
		{"tail", args{"path": "big.txt", "offset": lines - 1999}},
	} {
		b.Run(c.name, func(b *testing.B) {
			got := benchRun(b, fs.ReadFile(ws), c.args)
			if !strings.Contains(got, "of 131072") {
				b.Fatalf("unexpected output end: %q", got[len(got)-100:])
			}
			b.SetBytes(10 << 20)
		})
	}
}
