package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
)

// flatDecoder decodes arguments into a struct of plain fields — strings,
// booleans, integers, floats, by their json names — reading the bytes
// once and setting the fields, where encoding/json's Unmarshal took four
// allocations and most of a typed call's decoding time for the same
// result. It decodes only what it is sure encoding/json decodes the same
// way: a key matching a field's name exactly, a string without escapes
// and of valid UTF-8, an integer literal that fits the field. Anything
// else (null, an escape, a fraction, an unknown or differently cased key)
// makes it give up, and the caller decodes with encoding/json from a zero
// value (FuzzFlatDecoder holds the two to equal results).
type flatDecoder struct {
	fields []flatField
}

type flatField struct {
	name  string
	index int
	kind  reflect.Kind
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unmarshals reports whether encoding/json would decode t by a method of
// its own rather than by its kind.
func unmarshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// flatDecoderOf returns the decoder of struct type t, or nil when t has a
// field the byte reader does not decode as encoding/json would: an
// embedded field, a field of another kind or with a method of its own, a
// ",string" option, a name that is not plain, or two fields of one name.
func flatDecoderOf(t reflect.Type) *flatDecoder {
	if t.Kind() != reflect.Struct || unmarshals(t) {
		return nil
	}
	d := &flatDecoder{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for o := range strings.SplitSeq(opts, ",") {
			if o == "string" {
				return nil
			}
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) {
			return nil
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		if unmarshals(f.Type) {
			return nil
		}
		for _, g := range d.fields {
			if g.name == name {
				return nil
			}
		}
		d.fields = append(d.fields, flatField{name: name, index: i, kind: f.Type.Kind()})
	}
	return d
}

// plainName: letters, digits and underscores, which encoding/json takes
// as a tag name as written.
func plainName(s string) bool {
	for _, c := range s {
		if c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// decode sets dst's fields from b and reports whether it could; when not,
// dst may be partly set and must be thrown away.
func (d *flatDecoder) decode(b []byte, dst reflect.Value) bool {
	r := byteReader{b: b}
	r.space()
	ok := r.members(func(key []byte) bool {
		f := d.field(key)
		return f != nil && r.set(f, dst.Field(f.index))
	})
	r.space()
	return ok && r.i == len(r.b)
}

func (d *flatDecoder) field(key []byte) *flatField {
	for i := range d.fields {
		if string(key) == d.fields[i].name {
			return &d.fields[i]
		}
	}
	return nil
}

// set reads one value into v, a field of kind f.kind.
func (r *byteReader) set(f *flatField, v reflect.Value) bool {
	switch f.kind {
	case reflect.String:
		raw, escaped, ok := r.str()
		if !ok || escaped || !utf8.Valid(raw) {
			return false
		}
		v.SetString(string(raw))
		return true
	case reflect.Bool:
		switch {
		case r.literal("true"):
			v.SetBool(true)
		case r.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	}
	n, ok := r.integer()
	if !ok {
		return false
	}
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n < 0 || v.OverflowUint(uint64(n)) {
			return false
		}
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n))
	default:
		return false
	}
	return true
}

// integer reads an integer literal of at most 15 digits (exact in a
// float64, and in any field it fits); -0, a fraction, an exponent or more
// digits are left to the full decoder.
func (r *byteReader) integer() (int64, bool) {
	n, neg, ok := r.intPart()
	if !ok || neg && n == 0 {
		// -0 is no integer to a uint, and a negative zero to a float.
		return 0, false
	}
	if r.i < len(r.b) {
		switch r.b[r.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}

// intPart reads the integer part of a number, -?(0|[1-9][0-9]*), of at
// most 15 digits, and returns its value.
func (r *byteReader) intPart() (n int64, neg, ok bool) {
	neg = r.next('-')
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		n = n*10 + int64(r.b[r.i]-'0')
		r.i++
	}
	digits := r.i - start
	if digits == 0 || digits > 15 || digits > 1 && r.b[start] == '0' {
		return 0, false, false
	}
	if neg {
		n = -n
	}
	return n, neg, true
}
