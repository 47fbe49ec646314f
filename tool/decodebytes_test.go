package tool

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// flatArgs has a field of every kind the byte reader decodes, renamed,
// optional, ignored and unexported ones.
type flatArgs struct {
	Path    string  `json:"path"`
	Note    string  `json:"note,omitempty"`
	All     bool    `json:"all"`
	Limit   int     `json:"limit"`
	Small   int8    `json:"small"`
	Count   uint16  `json:"count"`
	Big     uint64  `json:"big"`
	Ratio   float64 `json:"ratio"`
	Half    float32 `json:"half"`
	NoTag   int
	Skipped string `json:"-"`
	//lint:ignore U1000 encoding/json skips an unexported field; so must the decoder
	hidden string
}

type unmarshalsItself string

func (u *unmarshalsItself) UnmarshalJSON([]byte) error { *u = "mine"; return nil }

// TestFlatDecoderTakesOnlyStructsItDecodesAlike: a struct with a field
// encoding/json would decode some other way gets no byte decoder.
func TestFlatDecoderTakesOnlyStructsItDecodesAlike(t *testing.T) {
	type inner struct{ A string }
	for _, tt := range []struct {
		name string
		typ  reflect.Type
		ok   bool
	}{
		{"plain fields", reflect.TypeFor[flatArgs](), true},
		{"no fields", reflect.TypeFor[struct{}](), true},
		{"embedded struct", reflect.TypeFor[struct {
			inner
			B int
		}](), false},
		{"a method of its own", reflect.TypeFor[struct {
			U unmarshalsItself `json:"u"`
		}](), false},
		{"a time", reflect.TypeFor[struct {
			T time.Time `json:"t"`
		}](), false},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](), false},
		{"a slice", reflect.TypeFor[struct {
			L []string `json:"l"`
		}](), false},
		{"a pointer", reflect.TypeFor[struct {
			P *int `json:"p"`
		}](), false},
		{"two fields of one name", reflect.TypeFor[struct {
			A int `json:"X"`
			X int
		}](), false},
		{"a name with punctuation", reflect.TypeFor[struct {
			A int `json:"a-b"`
		}](), false},
		{"not a struct", reflect.TypeFor[map[string]any](), false},
	} {
		if got := flatDecoderOf(tt.typ) != nil; got != tt.ok {
			t.Errorf("%s: decoder %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// TestFlatDecoderDecodesAsEncodingJSON: what the byte reader decodes
// equals what encoding/json decodes, and what it gives up on, encoding/json
// decodes (or refuses) from a zero value.
func TestFlatDecoderDecodesAsEncodingJSON(t *testing.T) {
	d := flatDecoderOf(reflect.TypeFor[flatArgs]())
	for _, tt := range []struct {
		args string
		fast bool
	}{
		{`{}`, true},
		{` { "path" : "a.go" , "limit" : -3 } `, true},
		{`{"path":"a","note":"b","all":true,"limit":1,"small":-128,"count":65535,"big":123456789012345,"ratio":2,"half":3,"NoTag":7}`, true},
		{`{"path":"a","path":"b"}`, true},
		{`{"path":"a\nb"}`, false},
		{`{"path":"\xff"}`, false},
		{`{"PATH":"a"}`, false},
		{`{"extra":1}`, false},
		{`{"Skipped":"x"}`, false},
		{`{"small":128}`, false},
		{`{"count":-1}`, false},
		{`{"limit":1.5}`, false},
		{`{"limit":1e3}`, false},
		{`{"ratio":-0}`, false},
		{`{"limit":1234567890123456}`, false},
		{`{"limit":null}`, false},
		{`{"all":"true"}`, false},
		{`{"path":"a"} x`, false},
		{`[]`, false},
	} {
		var fast flatArgs
		ok := d.decode([]byte(tt.args), reflect.ValueOf(&fast).Elem())
		if ok != tt.fast {
			t.Errorf("%s: decoded by the bytes %v, want %v", tt.args, ok, tt.fast)
		}
		if !ok {
			continue
		}
		var want flatArgs
		if err := json.Unmarshal([]byte(tt.args), &want); err != nil {
			t.Errorf("%s: the bytes decoded what encoding/json refuses: %v", tt.args, err)
			continue
		}
		if fast != want {
			t.Errorf("%s: decoded %+v, encoding/json %+v", tt.args, fast, want)
		}
	}
}

// TestTypedDecodeAllocatesTheValueAlone: a typed tool of plain fields
// decodes a call's arguments with one allocation, its input's.
func TestTypedDecodeAllocatesTheValueAlone(t *testing.T) {
	typed := New("noop", "Do nothing.", func(context.Context, struct {
		N int  `json:"n"`
		B bool `json:"b,omitempty"`
	}) (Output, error) {
		return Text("ok"), nil
	}).(Decoder)
	args := json.RawMessage(`{"n":1,"b":true}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := typed.Decode(args); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Fatalf("Decode allocated %v times, want 1", n)
	}
}

// TestTypedToolRunsWhatDecodeDecoded: Run takes Decode's result, by the
// bytes or by encoding/json, as the input it decodes itself.
func TestTypedToolRunsWhatDecodeDecoded(t *testing.T) {
	type in struct {
		Path string `json:"path"`
		N    int    `json:"n"`
	}
	var got []in
	tl := New("t", "t", func(_ context.Context, x in) (Output, error) {
		got = append(got, x)
		return Text("ok"), nil
	})
	for _, args := range []string{`{"path":"a","n":2}`, `{"path":"a\u0062","n":3}`} {
		input, err := tl.(Decoder).Decode(json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tl.Run(t.Context(), Call{Args: json.RawMessage(args), Input: input}); err != nil {
			t.Fatal(err)
		}
		if _, err := tl.Run(t.Context(), Call{Args: json.RawMessage(args)}); err != nil {
			t.Fatal(err)
		}
	}
	want := []in{{"a", 2}, {"a", 2}, {"ab", 3}, {"ab", 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ran with %+v, want %+v", got, want)
	}
}

// FuzzFlatDecoder holds the byte reader to encoding/json: whatever it
// decodes, encoding/json decodes to an equal value.
func FuzzFlatDecoder(f *testing.F) {
	for _, s := range []string{
		`{"path":"a","note":"b","all":true,"limit":1,"small":-128,"count":65535,"big":1,"ratio":2,"half":3,"NoTag":7}`,
		`{"limit":-0}`, `{"half":16777217}`, `{"path":"é"}`, `{"small":-129}`,
	} {
		f.Add(s)
	}
	d := flatDecoderOf(reflect.TypeFor[flatArgs]())
	f.Fuzz(func(t *testing.T, args string) {
		var fast flatArgs
		if !d.decode([]byte(args), reflect.ValueOf(&fast).Elem()) {
			return
		}
		var want flatArgs
		if err := json.Unmarshal([]byte(args), &want); err != nil {
			t.Fatalf("%q: decoded by the bytes, refused by encoding/json: %v", args, err)
		}
		if fast != want || math.Signbit(fast.Ratio) != math.Signbit(want.Ratio) || math.Signbit(float64(fast.Half)) != math.Signbit(float64(want.Half)) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", args, fast, want)
		}
	})
}

func BenchmarkTypedDecode(b *testing.B) {
	typed := New("read", "Read.", func(context.Context, struct {
		Path  string `json:"path"`
		Limit int    `json:"limit,omitempty"`
	}) (Output, error) {
		return Text("ok"), nil
	}).(Decoder)
	for _, bb := range []struct{ name, args string }{
		{"bytes", `{"path":"internal/x/y.go","limit":200}`},
		{"escaped", `{"path":"internal/x/y\u002ego","limit":200}`}, // encoding/json's
	} {
		args := json.RawMessage(bb.args)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := typed.Decode(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
