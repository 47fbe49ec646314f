package scripted

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// FuzzParse checks that ParseScript never panics, that whatever it accepts makes
// a valid model, and that streaming a parsed round delivers exactly the
// round's text, reasoning and arguments, with no delta splitting a rune.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			return
		}
		// Waiting is not what is being fuzzed.
		s.Delay = 0
		for i := range s.Rounds {
			s.Rounds[i].Delay, s.Rounds[i].Hold = 0, 0
		}
		m := New(s, NoHistoryCheck())
		for i := range min(m.Remaining(), 8) {
			st, err := m.Stream(context.Background(), &llm.Request{})
			if err != nil {
				if strings.Contains(err.Error(), "invalid script") {
					t.Fatalf("ParseScript accepted a script New rejects: %v", err)
				}
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("round %d: untyped error %v", i+1, err)
				}
				continue
			}
			checkDeltas(t, st)
		}
	})
}

// checkDeltas reads a stream and checks that its deltas add up to the parts
// of its response and split no rune of a valid UTF-8 text.
func checkDeltas(t *testing.T, st llm.Stream) {
	t.Helper()
	defer st.Close()
	deltas := map[string][]string{} // "text", "reasoning", "call <i>"
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("io.EOF before done")
		}
		if err != nil {
			return // a scripted error
		}
		switch ev.Kind {
		case llm.EventText, llm.EventReasoning:
			deltas[ev.Kind.String()] = append(deltas[ev.Kind.String()], ev.Delta)
		case llm.EventCallDelta:
			key := "call " + strconv.Itoa(ev.Index)
			deltas[key] = append(deltas[key], ev.Delta)
		case llm.EventDone:
			want := map[string]string{}
			calls := 0
			for _, p := range ev.Response.Parts {
				switch p.Kind {
				case llm.PartText:
					want["text"] = p.Text
				case llm.PartReasoning:
					want["reasoning"] = p.Text
				case llm.PartCall:
					want["call "+strconv.Itoa(calls)] = p.Call.Args
					calls++
				}
			}
			for key, full := range want {
				if got := strings.Join(deltas[key], ""); got != full {
					t.Errorf("%s: deltas %q add up to %q, want %q", key, deltas[key], got, full)
				}
				if !utf8.ValidString(full) {
					continue
				}
				for _, d := range deltas[key] {
					if !utf8.ValidString(d) {
						t.Errorf("%s: delta %q splits a rune", key, d)
					}
				}
			}
			if len(deltas) != len(want) {
				t.Errorf("deltas for %d parts, response has %d", len(deltas), len(want))
			}
			return
		}
	}
}
