package tool

import (
	"bytes"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Accept checks args against the schema like Check, without handing back
// the decoded object. For a plain schema (typed fields, required, closed
// or open objects, arrays of them, string enums and bounds) the arguments'
// bytes are read once against it and nothing is decoded or allocated:
// decoding every call's arguments into maps only to look at them was the
// largest cost of a round after the model's. Whatever that reading cannot
// vouch for — a problem to explain, an escaped string that must be
// measured, a fractional or very long number, a duplicate key, a closed
// object's unknown one — goes to Check, which judges and words the refusal
// as before; so Accept refuses exactly what Check refuses, with the same
// error (FuzzAccept).
func (v *Validator) Accept(args []byte) error {
	if v.plan != nil {
		trimmed := bytes.TrimSpace(args)
		if len(trimmed) == 0 {
			trimmed = noArguments
		}
		if v.plan.accepts(trimmed) {
			return nil
		}
	}
	_, err := v.Check(args)
	return err
}

// noArguments is what a call without arguments is read as.
var noArguments = []byte("{}")

// bytePlan is a schema as the byte reader follows it: one JSON type and
// the keywords of that type the walk checks. It is built only for schemas
// the walk judges alone (Validator.simple), and only from the keywords
// simpleSchema admits, so accepting by the plan is accepting by the walk.
type bytePlan struct {
	kind byteKind
	// nullable: null is taken too (the type is [T, "null"]).
	nullable bool
	// enum holds the allowed strings (kind string only), or nil.
	enum           []string
	minLen, maxLen int // in runes; -1 when unset
	min, max       float64
	hasMin, hasMax bool
	items          *bytePlan // kind array: every item's plan
	minItems       int       // -1 when unset
	maxItems       int       // -1 when unset
	props          []byteProp
	required       uint64 // bit i: props[i] is required
	// open: the object allows other fields, whose values are only read
	// as JSON (byteReader.skip).
	open bool
}

type byteProp struct {
	name string
	plan *bytePlan
}

type byteKind uint8

const (
	kindString byteKind = iota + 1
	kindInteger
	kindNumber
	kindBoolean
	kindArray
	kindObject
)

// kinds are the JSON types a plan reads, by their schema names.
var kinds = map[string]byteKind{
	"string": kindString, "integer": kindInteger, "number": kindNumber,
	"boolean": kindBoolean, "array": kindArray, "object": kindObject,
}

// maxPlanDepth bounds the schema nesting a plan follows; a deeper (or
// recursive) schema has no plan and is judged by Check.
const maxPlanDepth = 16

// planOf builds the plan of s, or returns nil when the reader cannot judge
// s alone: no type, or more than one besides null, a non-string enum, an
// array without items, an object with more than 64 properties, or a
// required field that is not a property.
func planOf(w walker, s *jsonschema.Schema, depth int) *bytePlan {
	s = w.deref(s, 0)
	if s == nil || depth > maxPlanDepth {
		return nil
	}
	ts := schemaTypes(s)
	p := &bytePlan{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	// A type or null, as typed tools' slices and pointers are given.
	if len(ts) == 2 && (ts[0] == "null") != (ts[1] == "null") {
		p.nullable = true
		if ts[0] == "null" {
			ts = ts[1:]
		} else {
			ts = ts[:1]
		}
	}
	if len(ts) != 1 {
		return nil
	}
	if p.kind = kinds[ts[0]]; p.kind == 0 {
		return nil
	}
	if len(s.Enum) > 0 {
		if p.kind != kindString {
			return nil
		}
		for _, e := range s.Enum {
			str, ok := e.(string)
			if !ok {
				return nil
			}
			p.enum = append(p.enum, str)
		}
	}
	if s.MinLength != nil {
		p.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		p.maxLen = *s.MaxLength
	}
	if s.Minimum != nil {
		p.min, p.hasMin = *s.Minimum, true
	}
	if s.Maximum != nil {
		p.max, p.hasMax = *s.Maximum, true
	}
	if s.MinItems != nil {
		p.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		p.maxItems = *s.MaxItems
	}
	switch p.kind {
	case kindArray:
		if s.Items == nil {
			return nil
		}
		if p.items = planOf(w, s.Items, depth+1); p.items == nil {
			return nil
		}
	case kindObject:
		if len(s.Properties) > 64 {
			return nil
		}
		p.open = !w.closed(s)
		for _, name := range sortedKeys(s.Properties) {
			sub := planOf(w, s.Properties[name], depth+1)
			if sub == nil {
				return nil
			}
			p.props = append(p.props, byteProp{name: name, plan: sub})
		}
	required:
		for _, r := range s.Required {
			for i, pr := range p.props {
				if pr.name == r {
					p.required |= 1 << i
					continue required
				}
			}
			return nil
		}
	}
	return p
}

// accepts reports whether b (trimmed of surrounding space) is one JSON
// value the plan accepts. False means only "not vouched for".
func (p *bytePlan) accepts(b []byte) bool {
	r := byteReader{b: b}
	return r.value(p) && r.i == len(r.b)
}

// byteReader reads JSON from b at i, following a plan. Every method
// returns false at the first byte it cannot vouch for.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next reports whether the byte at i is c, and steps past it if so.
func (r *byteReader) next(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *byteReader) value(p *bytePlan) bool {
	if p.nullable && len(p.enum) == 0 && r.literal("null") {
		return true
	}
	switch p.kind {
	case kindString:
		return r.stringValue(p)
	case kindInteger, kindNumber:
		return r.number(p)
	case kindBoolean:
		return r.literal("true") || r.literal("false")
	case kindArray:
		return r.array(p)
	case kindObject:
		return r.object(p)
	}
	return false
}

func (r *byteReader) literal(s string) bool {
	if len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// str reads a string and returns its bytes between the quotes, and
// whether it holds an escape (then those bytes are not its value).
func (r *byteReader) str() (raw []byte, escaped, ok bool) {
	if !r.next('"') {
		return nil, false, false
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			raw = r.b[start:r.i]
			r.i++
			return raw, escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if r.i+1 >= len(r.b) {
				return nil, false, false
			}
			switch r.b[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if r.i+6 > len(r.b) {
					return nil, false, false
				}
				for _, h := range r.b[r.i+2 : r.i+6] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				r.i += 6
			default:
				return nil, false, false
			}
		default:
			r.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (r *byteReader) stringValue(p *bytePlan) bool {
	raw, escaped, ok := r.str()
	if !ok {
		return false
	}
	measured := len(p.enum) > 0 || p.minLen >= 0 || p.maxLen >= 0
	if !measured {
		return true
	}
	if escaped {
		// Its value is not its bytes: Check decodes and measures it.
		return false
	}
	if len(p.enum) > 0 {
		found := false
		for _, e := range p.enum {
			if string(raw) == e {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	// encoding/json turns each byte of invalid UTF-8 into one U+FFFD,
	// and RuneCount counts each such byte as one rune: the same length.
	n := utf8.RuneCount(raw)
	return (p.minLen < 0 || n >= p.minLen) && (p.maxLen < 0 || n <= p.maxLen)
}

// number reads an integer (byteReader.integer); a fraction, an exponent
// or a long number is Check's to judge.
func (r *byteReader) number(p *bytePlan) bool {
	n, ok := r.integer()
	if !ok {
		return false
	}
	f := float64(n)
	return (!p.hasMin || f >= p.min) && (!p.hasMax || f <= p.max)
}

func (r *byteReader) array(p *bytePlan) bool {
	n := 0
	return r.elements(func() bool {
		n++
		return r.value(p.items)
	}) && (p.minItems < 0 || n >= p.minItems) && (p.maxItems < 0 || n <= p.maxItems)
}

// elements reads an array, calling value with the reader at each element,
// which value reads.
func (r *byteReader) elements(value func() bool) bool {
	if !r.next('[') {
		return false
	}
	r.space()
	if r.next(']') {
		return true
	}
	for {
		r.space()
		if !value() {
			return false
		}
		r.space()
		if r.next(']') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

// maxSkipDepth bounds the nesting of a value skip reads.
const maxSkipDepth = 32

// skip reads any JSON value, the value of a field an open object allows
// without a schema: the walk does not look at it, but encoding/json must
// decode it. It vouches for less than encoding/json takes — no exponent,
// at most 15 integer digits (a float64 holds it), no escaped keys, at
// most maxSkipDepth levels — and leaves the rest to Check.
func (r *byteReader) skip(depth int) bool {
	if r.i >= len(r.b) || depth > maxSkipDepth {
		return false
	}
	switch r.b[r.i] {
	case '"':
		_, _, ok := r.str()
		return ok
	case '{':
		return r.members(func([]byte) bool { return r.skip(depth + 1) })
	case '[':
		return r.elements(func() bool { return r.skip(depth + 1) })
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	}
	if _, _, ok := r.intPart(); !ok {
		return false
	}
	if r.next('.') {
		start := r.i
		for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
			r.i++
		}
		if r.i == start {
			return false
		}
	}
	return r.i == len(r.b) || r.b[r.i] != 'e' && r.b[r.i] != 'E'
}

func (r *byteReader) object(p *bytePlan) bool {
	var seen uint64
	return r.members(func(key []byte) bool {
		i := p.prop(key)
		if i < 0 && p.open {
			return r.skip(0)
		}
		if i < 0 || seen&(1<<i) != 0 {
			// An unknown field is refused by a closed object, and a
			// repeated one is decoded as its last value: Check's.
			return false
		}
		seen |= 1 << i
		return r.value(p.props[i].plan)
	}) && seen&p.required == p.required
}

// members reads an object, calling value with each member's key and the
// reader at the member's value, which value reads. A key with an escape
// is not vouched for: its name is not its bytes.
func (r *byteReader) members(value func(key []byte) bool) bool {
	if !r.next('{') {
		return false
	}
	r.space()
	if r.next('}') {
		return true
	}
	for {
		r.space()
		key, escaped, ok := r.str()
		if !ok || escaped {
			return false
		}
		r.space()
		if !r.next(':') {
			return false
		}
		r.space()
		if !value(key) {
			return false
		}
		r.space()
		if r.next('}') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

func (p *bytePlan) prop(key []byte) int {
	for i := range p.props {
		if string(key) == p.props[i].name {
			return i
		}
	}
	return -1
}
