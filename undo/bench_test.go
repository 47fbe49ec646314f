package undo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tools/fs"
)

// BenchmarkWriteFile is one write_file call of a 4 KiB file, plain and
// tracked for undo (a new turn each call, so every call keeps a
// before-image: the worst case).
func BenchmarkWriteFile(b *testing.B) {
	content := strings.Repeat("x", 4<<10)
	for _, tracked := range []bool{false, true} {
		b.Run(fmt.Sprintf("tracked=%v", tracked), func(b *testing.B) {
			b.StopTimer()
			fx := newFixture(b)
			var wt tool.Tool
			for _, t := range fs.Tools(fx.ws) {
				if t.Spec().Name == "write_file" {
					wt = t
				}
			}
			if tracked {
				wt = fx.tr.Wrap(wt)
			}
			args, _ := json.Marshal(map[string]any{"path": "a.txt", "content": content})
			b.StartTimer()
			for i := 0; b.Loop(); i++ {
				out, err := wt.Run(context.Background(), tool.Call{Name: "write_file", Args: args, ThreadID: fx.thread, TurnID: fmt.Sprintf("turn_%d", i), Partial: &strings.Builder{}})
				if err != nil || out.Failed {
					b.Fatal(err, out.Text)
				}
			}
		})
	}
}
