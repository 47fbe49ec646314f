package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

type event struct{ name, data string }

func readAll(t testing.TB, r io.Reader) ([]event, error) {
	t.Helper()
	sr := NewReader(r)
	var out []event
	for sr.Next() {
		out = append(out, event{string(sr.Event()), string(sr.Data())})
	}
	return out, sr.Err()
}

func TestReaderReadsEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []event
	}{
		{"one data line", "data: {\"a\":1}\n\n", []event{{"", `{"a":1}`}}},
		{"lines joined by newline", "data: a\ndata: b\n\n", []event{{"", "a\nb"}}},
		{"CRLF line ends", "data: a\r\ndata: b\r\n\r\n", []event{{"", "a\nb"}}},
		{"no space after the colon", "data:a\n\n", []event{{"", "a"}}},
		{"only one space is taken", "data:  a\n\n", []event{{"", " a"}}},
		{"named event", "event: response.created\ndata: {}\n\n", []event{{"response.created", "{}"}}},
		{"name reset after each event", "event: x\ndata: 1\n\ndata: 2\n\n", []event{{"x", "1"}, {"", "2"}}},
		{"comments skipped", ": OPENROUTER PROCESSING\n\n: ping\ndata: 1\n\n", []event{{"", "1"}}},
		{"unknown fields skipped", "id: 7\nretry: 100\ndata: 1\n\n", []event{{"", "1"}}},
		{"event without data is not dispatched", "event: x\n\ndata: 1\n\n", []event{{"", "1"}}},
		{"blank lines between events", "\n\n\ndata: 1\n\n\n\ndata: 2\n\n", []event{{"", "1"}, {"", "2"}}},
		{"field without colon", "data\n\n", []event{{"", ""}}},
		{"empty data line still dispatches", "data:\n\n", []event{{"", ""}}},
		{"an event cut by the end is dropped", "data: 1\n\ndata: 2\n", []event{{"", "1"}}},
		{"a last line without newline is dropped", "data: 1\n\ndata: 2", []event{{"", "1"}}},
		{"DONE sentinel is plain data", "data: [DONE]\n\n", []event{{"", "[DONE]"}}},
		{"colon inside the value", "data: {\"a\":\"b:c\"}\n\n", []event{{"", `{"a":"b:c"}`}}},
		{"long line beyond the buffer", "data: " + strings.Repeat("x", 100_000) + "\n\n", []event{{"", strings.Repeat("x", 100_000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.in)
				if split {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(t, r)
				if err != nil {
					t.Fatalf("split %v: %v", split, err)
				}
				if !equal(got, tc.want) {
					t.Errorf("split %v: got %q, want %q", split, got, tc.want)
				}
			}
		})
	}
}

func equal(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReaderReportsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: 2\n"), iotest.ErrReader(boom))
	got, err := readAll(t, r)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want it to wrap %v", err, boom)
	}
	if !equal(got, []event{{"", "1"}}) {
		t.Errorf("events before the error: %q", got)
	}
}

func TestReaderRefusesAnEndlessLine(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: "), io.LimitReader(repeatReader('x'), MaxEventSize+1))
	_, err := readAll(t, r)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
}

func TestReaderRefusesAnEndlessEvent(t *testing.T) {
	line := "data: " + strings.Repeat("x", 1<<20) + "\n"
	r := io.LimitReader(repeatString(line), MaxEventSize+int64(2*len(line)))
	_, err := readAll(t, r)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type repeatString string

func (s repeatString) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], s)
	}
	return n, nil
}

// FuzzReaderMatchesSDK reads arbitrary streams with Reader and with the
// official OpenAI SDK's decoder, which the adapters used before: the same
// events with the same names and data (the SDK ends each data line with a
// newline, Reader joins them as the standard says).
func FuzzReaderMatchesSDK(f *testing.F) {
	for _, s := range []string{
		"data: 1\n\n",
		"event: e\ndata: a\ndata: b\n\n: c\n\ndata:x\r\n\r\n",
		"data\n\nid: 1\nretry: 2\n\n",
		"data: 1\n\ndata: 2",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.IndexByte(in, '\r') >= 0 && bytes.Contains(bytes.ReplaceAll(in, []byte("\r\n"), nil), []byte("\r")) {
			return // a lone CR ends a line for neither reader in the same way
		}
		got, err := readAll(t, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		dec := ssestream.NewDecoder(&http.Response{Body: io.NopCloser(bytes.NewReader(in)), Header: http.Header{"Content-Type": {"text/event-stream"}}})
		var want []event
		for dec.Next() {
			ev := dec.Event()
			want = append(want, event{ev.Type, strings.TrimSuffix(string(ev.Data), "\n")})
		}
		if !equal(got, want) {
			t.Fatalf("%q: got %q, SDK %q", in, got, want)
		}
	})
}

// endlessComments is a stream of keep-alive comments that never ends.
type endlessComments struct{}

func (endlessComments) Read(p []byte) (int, error) {
	const line = ": keep-alive\n\n"
	n := 0
	for n+len(line) <= len(p) {
		n += copy(p[n:], line)
	}
	return n, nil
}

// TestKeepAlivesForEverAreBounded: comments and blank lines count toward the
// bound of what comes before an event, so a stream of nothing but
// keep-alives ends with ErrTooLarge instead of being read for ever.
func TestKeepAlivesForEverAreBounded(t *testing.T) {
	r := NewReader(endlessComments{})
	if r.Next() {
		t.Fatal("an event from a stream of comments")
	}
	if r.Err() != ErrTooLarge {
		t.Errorf("Err() = %v, want ErrTooLarge", r.Err())
	}
	if r.Read() <= MaxEventSize {
		t.Errorf("read %d bytes, want just past %d", r.Read(), MaxEventSize)
	}
}
