package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// TypedOption configures a tool made by New.
type TypedOption func(*typedConfig)

type typedConfig struct {
	spec Spec
	// keys is a func(In) Keys; New checks its type, since options are not
	// generic over In.
	keys any
}

// WithAccess sets the tool's concurrency class. Without it a typed tool is
// Exclusive, the safe default of Spec.
func WithAccess(a Access) TypedOption {
	return func(c *typedConfig) { c.spec.Access = a }
}

// WithTimeout sets the tool's default deadline for one call.
func WithTimeout(d time.Duration) TypedOption {
	return func(c *typedConfig) { c.spec.Timeout = d }
}

// WithApproval marks the tool as one that asks the user before running
// under the on-request policy.
func WithApproval() TypedOption {
	return func(c *typedConfig) { c.spec.NeedsApproval = true }
}

// WithPause marks the tool as a pause tool (Spec.Pauses).
func WithPause() TypedOption {
	return func(c *typedConfig) { c.spec.Pauses = true }
}

// WithKeys declares the resources a call reads and writes, computed from
// its decoded input, such as the path write_file writes. In must be the
// input type of the tool given to New.
func WithKeys[In any](keys func(In) Keys) TypedOption {
	return func(c *typedConfig) { c.keys = keys }
}

// New returns a tool that decodes its arguments into In and calls fn. The
// JSON Schema offered to the model is derived from In, which must be a
// struct: property names from json tags, descriptions from jsonschema tags,
// fields without omitempty or omitzero required, and no other properties
// allowed.
//
// New panics if In has no JSON Schema (channels, functions, cycles, not a
// struct) or if a WithKeys function takes another type than In. Both are
// mistakes in the program that show the first time it runs, like a bad
// pattern given to regexp.MustCompile; they never depend on what a model
// sends.
func New[In any](name, description string, fn func(ctx context.Context, in In) (Output, error), opts ...TypedOption) Tool {
	cfg := typedConfig{spec: Spec{Name: name, Description: description}}
	for _, o := range opts {
		o(&cfg)
	}
	schema, err := schemaFor[In]()
	if err != nil {
		panic(fmt.Sprintf("tool.New(%q): %v", name, err))
	}
	cfg.spec.Schema = schema
	t := &typed[In]{spec: cfg.spec, fn: fn, flat: flatDecoderOf(reflect.TypeFor[In]())}
	if cfg.keys == nil {
		return t
	}
	keys, ok := cfg.keys.(func(In) Keys)
	if !ok {
		panic(fmt.Sprintf("tool.New(%q): WithKeys takes %T, want func(%v) tool.Keys", name, cfg.keys, reflect.TypeFor[In]()))
	}
	return &keyedTyped[In]{typed: t, keys: keys}
}

// SchemaOf returns the JSON Schema New derives from a struct type T, for
// other uses of the same shape (a structured answer, rein.RunTyped).
func SchemaOf[T any]() (json.RawMessage, error) { return schemaFor[T]() }

func schemaFor[In any]() (json.RawMessage, error) {
	if k := reflect.TypeFor[In]().Kind(); k != reflect.Struct {
		return nil, fmt.Errorf("input type %v is a %v, want a struct", reflect.TypeFor[In](), k)
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("deriving the input schema: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the input schema: %w", err)
	}
	return b, nil
}

type typed[In any] struct {
	spec Spec
	fn   func(context.Context, In) (Output, error)
	// flat decodes In's plain fields from the bytes, or is nil.
	flat *flatDecoder
}

func (t *typed[In]) Spec() Spec { return t.spec }

// Decode implements Decoder: it returns a *In. The arguments passed In's
// schema, which admits no field In lacks (additionalProperties false,
// names matched exactly), so encoding/json's Unmarshal decodes them as the
// strict decoder Run uses would, with three allocations fewer; and a
// struct of plain fields is decoded from the bytes (flatDecoder), with
// one allocation, the value's.
func (t *typed[In]) Decode(args json.RawMessage) (any, error) {
	in := new(In)
	if t.flat != nil && t.flat.decode(args, reflect.ValueOf(in).Elem()) {
		return in, nil
	}
	var zero In
	*in = zero // what the byte reader set before it gave up
	if err := json.Unmarshal(args, in); err != nil {
		return nil, err
	}
	return in, nil
}

func (t *typed[In]) Run(ctx context.Context, call Call) (Output, error) {
	if in, ok := call.Input.(*In); ok && in != nil {
		return t.fn(ctx, *in)
	}
	in, err := decodeArgs[In](t.spec.Name, call.Args)
	if err != nil {
		return Output{}, err
	}
	return t.fn(ctx, in)
}

// keyedTyped is a separate type so that a typed tool without WithKeys does
// not implement Keyer and keeps the keys KeysOf gives its Access.
type keyedTyped[In any] struct {
	*typed[In]
	keys func(In) Keys
}

// Keys implements Keyer. Arguments that do not decode make the call
// exclusive: it will fail, and waiting costs less than guessing its keys.
func (t *keyedTyped[In]) Keys(args json.RawMessage) Keys {
	in, err := decodeArgs[In](t.spec.Name, args)
	if err != nil {
		return Keys{Exclusive: true}
	}
	return t.keys(in)
}

// DecodeError reports arguments that do not fit a typed tool's input.
type DecodeError struct {
	Tool string
	// Field is the dotted path of the offending field, empty when the
	// arguments as a whole are at fault.
	Field string
	Err   error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for %s: ", e.Tool)
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

func decodeArgs[In any](tool string, args json.RawMessage) (In, error) {
	var in In
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return in, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, decodeError(tool, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, &DecodeError{Tool: tool, Err: errors.New("unexpected data after the arguments object")}
	}
	return in, nil
}

// decodeError rewrites encoding/json's errors, which speak of Go types, into
// the JSON terms a model understands.
func decodeError(tool string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &DecodeError{Tool: tool, Err: fmt.Errorf("want a JSON object, got %s", te.Value)}
		}
		return &DecodeError{Tool: tool, Field: te.Field, Err: fmt.Errorf("want %s, got %s", jsonKind(te.Type), te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DecodeError{Tool: tool, Err: fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &DecodeError{Tool: tool, Err: errors.New("not valid JSON: the arguments end early")}
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &DecodeError{Tool: tool, Field: strings.Trim(f, `"`), Err: errors.New("no such field in the schema")}
	}
	return &DecodeError{Tool: tool, Err: err}
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return t.String()
	}
}

// Text returns an output that is only text for the model.
func Text(s string) Output { return Output{Text: s} }

// Textf is Text with fmt.Sprintf formatting.
func Textf(format string, args ...any) Output { return Output{Text: fmt.Sprintf(format, args...)} }
