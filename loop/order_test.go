package loop

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/reinhq/rein/llm"
)

// fakeMinter keeps ids unique as the run does, with predictable fresh ids.
type fakeMinter struct {
	seen  map[string]bool
	fresh int
}

func (m *fakeMinter) uniqueID(id string) string {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	if id == "" || m.seen[id] {
		m.fresh++
		id = "fresh_" + strconv.Itoa(m.fresh)
	}
	m.seen[id] = true
	return id
}

func TestCallOrder(t *testing.T) {
	type done struct {
		index int
		id    string
	}
	cases := []struct {
		name string
		in   []done
		want []string // ids handed on, in order
	}{
		{"in order", []done{{0, "a"}, {1, "b"}}, []string{"a", "b"}},
		{"out of order held", []done{{1, "b"}, {2, "c"}, {0, "a"}}, []string{"a", "b", "c"}},
		{"gap never filled", []done{{0, "a"}, {2, "c"}}, []string{"a"}},
		{"repeat of an index handed on is dropped", []done{{0, "a"}, {0, "a2"}, {1, "b"}}, []string{"a", "b"}},
		{"repeat of a held index keeps the last", []done{{1, "b"}, {1, "b2"}, {0, "a"}}, []string{"a", "b2"}},
		{"negative index dropped", []done{{-1, "x"}, {0, "a"}}, []string{"a"}},
		{"repeated id made unique", []done{{0, "same"}, {1, "same"}}, []string{"same", "fresh_1"}},
		{"empty id minted", []done{{0, ""}}, []string{"fresh_1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o callOrder
			m := &fakeMinter{}
			// Dirty the order first: reset must leave nothing behind.
			o.put(3, &llm.Call{ID: "stale"})
			o.put(0, &llm.Call{ID: "old"})
			o.next(m)
			o.reset()
			m = &fakeMinter{}
			var got []string
			for _, d := range tc.in {
				if o.handedOn(d.index) || !o.put(d.index, &llm.Call{ID: d.id}) {
					continue
				}
				for {
					c, i, ok := o.next(m)
					if !ok {
						break
					}
					if i != len(got) {
						t.Fatalf("call handed on at index %d, want %d", i, len(got))
					}
					got = append(got, c.ID)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("handed on %v, want %v", got, tc.want)
			}
			for i, id := range got {
				if o.id(i) != id {
					t.Fatalf("id(%d) = %q, want %q", i, o.id(i), id)
				}
			}
		})
	}
}

func TestCallOrderLate(t *testing.T) {
	var o callOrder
	m := &fakeMinter{}
	o.put(0, &llm.Call{ID: "a"})
	o.next(m)
	if _, ok := o.late(0, llm.Call{ID: "a"}, m); ok {
		t.Fatal("a call handed on during the stream was handed on again from the response")
	}
	c, ok := o.late(1, llm.Call{ID: "a"}, m)
	if !ok || c.ID != "fresh_1" || o.id(1) != "fresh_1" {
		t.Fatalf("late call: %+v %v; want a fresh id at index 1", c, ok)
	}
}

func TestAssistantItem(t *testing.T) {
	m := &fakeMinter{}
	var o callOrder
	o.put(0, &llm.Call{ID: "dup"})
	o.next(m)
	o.put(1, &llm.Call{ID: "dup"})
	o.next(m) // fresh_1
	call := func(id string) llm.Part { return llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: id, Name: "t"}} }
	text := llm.Part{Kind: llm.PartText, Text: "hi"}
	resp := &llm.Response{Parts: []llm.Part{text, call("dup"), call("dup")}}

	item, ignored := assistantItem(resp, "hi", nil, &o, false, "")
	if ignored != 0 || len(item.Parts) != 3 || item.Parts[1].Call.ID != "dup" || item.Parts[2].Call.ID != "fresh_1" {
		t.Fatalf("item %+v ignored %d; want the second call renamed", item, ignored)
	}
	if resp.Parts[2].Call.ID != "dup" {
		t.Fatal("the provider's response was modified")
	}
	same := &llm.Response{Parts: []llm.Part{text, call("dup")}}
	if item, _ := assistantItem(same, "hi", nil, &o, false, ""); &item.Parts[0] != &same.Parts[0] {
		t.Fatal("parts copied though no call changed")
	}

	item, ignored = assistantItem(resp, "hi", nil, &o, true, "")
	if ignored != 2 || len(item.Parts) != 1 || item.Parts[0].Kind != llm.PartText {
		t.Fatalf("final round item %+v ignored %d; want the text alone, 2 ignored", item, ignored)
	}

	item, _ = assistantItem(nil, "partial", []llm.Call{{ID: "c1", Name: "t"}}, &o, false, "")
	if item.Role != llm.RoleAssistant || len(item.Parts) != 2 || item.Parts[0].Text != "partial" || item.Parts[1].Call.ID != "c1" {
		t.Fatalf("broken stream item %+v; want its text then its calls", item)
	}
	if item, _ := assistantItem(nil, "", nil, &o, false, ""); len(item.Parts) != 0 {
		t.Fatalf("nothing arrived, item %+v; want no parts", item)
	}
}
