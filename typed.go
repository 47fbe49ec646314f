package rein

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// Structured answers in the facade: a turn whose answer is a Go value.

// Output asks a turn for a structured answer (package llm): a name, a
// description and a JSON Schema. OutputOf derives one from a struct type.
type Output = llm.Output

// OutputError says why a structured answer was refused (stop reason
// StopInvalidOutput).
type OutputError = loop.OutputError

// StopInvalidOutput: the answer did not match the schema, even after the
// repair round.
const StopInvalidOutput = loop.StopInvalidOutput

// OutputOf returns the structured answer of type T, a struct: its schema
// derived as NewTool derives a tool's input (json tags name the properties,
// jsonschema tags describe them, fields without omitempty are required, no
// other properties are allowed), named after the type. Strict is set when
// every property is required.
func OutputOf[T any]() (*Output, error) {
	schema, err := tool.SchemaOf[T]()
	if err != nil {
		return nil, fmt.Errorf("rein: the answer type %v: %w", reflect.TypeFor[T](), err)
	}
	return &Output{Name: outputName(reflect.TypeFor[T]()), Schema: schema, Strict: llm.StrictSchema(schema)}, nil
}

// outputName names an output after its type: "Person", "Pair_int" for a
// generic Pair[int]; "answer" for an unnamed struct.
func outputName(t reflect.Type) string { return llm.OutputName(t.Name()) }

// RunTyped runs one turn of prompt on thread t and returns its answer
// decoded into T (see OutputOf): the model is asked for the answer in T's
// shape the way its provider takes it (a JSON Schema response format, or a
// forced tool call), the answer is checked against the schema, and a wrong
// one gets one repair round with what was wrong. The outcome is returned
// whatever happened; the error is the turn's (an *OutputError when the
// answer never matched), or says the turn ended without an answer (paused:
// answer it with Thread.Answer and read Outcome.Output; interrupted).
//
// The turn runs with the agent's options and a copy of its tools (the
// output may add a tool named after T); the thread's other turns are plain.
func RunTyped[T any](ctx context.Context, t *Thread, prompt string) (T, *Outcome, error) {
	var v T
	output, err := t.agent.output(reflect.TypeFor[T](), OutputOf[T])
	if err != nil {
		return v, nil, err
	}
	out, err := t.run(ctx, output, prompt)
	if err != nil {
		return v, out, err
	}
	if out.Status != StatusCompleted || len(out.Output) == 0 {
		return v, out, fmt.Errorf("rein: the turn ended %s (%s) without a structured answer", out.Status, out.StopReason)
	}
	if err := json.Unmarshal(out.Output, &v); err != nil {
		return v, out, fmt.Errorf("rein: decoding the answer into %T: %w", v, err)
	}
	return v, out, nil
}

// output returns the structured answer of answers of type rt, made on
// first use.
func (a *Agent) output(rt reflect.Type, newOutput func() (*Output, error)) (*Output, error) {
	if o, ok := a.typed.Load(rt); ok {
		return o.(*Output), nil
	}
	o, err := newOutput()
	if err != nil {
		return nil, err
	}
	got, _ := a.typed.LoadOrStore(rt, o)
	return got.(*Output), nil
}
