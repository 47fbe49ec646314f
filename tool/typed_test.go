package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/tool"
)

type greetIn struct {
	Name  string   `json:"name" jsonschema:"who to greet"`
	Times int      `json:"times,omitempty" jsonschema:"how many times, default 1"`
	Tags  []string `json:"tags,omitempty"`
}

func greet(_ context.Context, in greetIn) (tool.Output, error) {
	n := max(in.Times, 1)
	return tool.Text(strings.Repeat("hello "+in.Name+" ", n)), nil
}

func TestNewDerivesSchemaFromInput(t *testing.T) {
	g := tool.New("greet", "Greets someone.", greet)
	var schema struct {
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(g.Spec().Schema, &schema); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, g.Spec().Schema)
	}
	if schema.Type != "object" {
		t.Errorf("type = %q, want object", schema.Type)
	}
	if !reflect.DeepEqual(schema.Required, []string{"name"}) {
		t.Errorf("required = %v, want [name]", schema.Required)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Errorf("additionalProperties = %v, want false", schema.AdditionalProperties)
	}
	if !strings.Contains(string(schema.Properties["name"]), "who to greet") {
		t.Errorf("name property lacks its description: %s", schema.Properties["name"])
	}
	if len(schema.Properties) != 3 {
		t.Errorf("properties = %d, want 3: %s", len(schema.Properties), g.Spec().Schema)
	}
	if got := g.Spec().LLM().Schema; string(got) != string(g.Spec().Schema) {
		t.Errorf("LLM schema = %s, want the derived one", got)
	}
}

func TestNewOptionsSetSpec(t *testing.T) {
	tests := []struct {
		name string
		opts []tool.TypedOption
		want tool.Spec
	}{
		{"defaults are exclusive with no deadline", nil, tool.Spec{Name: "greet", Access: tool.Exclusive}},
		{"access", []tool.TypedOption{tool.WithAccess(tool.ReadOnly)}, tool.Spec{Name: "greet", Access: tool.ReadOnly}},
		{"timeout", []tool.TypedOption{tool.WithTimeout(3 * time.Second)}, tool.Spec{Name: "greet", Timeout: 3 * time.Second}},
		{"approval", []tool.TypedOption{tool.WithApproval()}, tool.Spec{Name: "greet", NeedsApproval: true}},
		{"pause", []tool.TypedOption{tool.WithPause()}, tool.Spec{Name: "greet", Pauses: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tool.New("greet", "", greet, tt.opts...).Spec()
			s.Schema = nil
			if !reflect.DeepEqual(s, tt.want) {
				t.Errorf("spec = %+v, want %+v", s, tt.want)
			}
		})
	}
}

func TestNewRunDecodesArguments(t *testing.T) {
	g := tool.New("greet", "", greet)
	tests := []struct {
		name     string
		args     string
		want     string
		errField string // non-empty: want a DecodeError naming this field
		errText  string // substring of the error
	}{
		{name: "object", args: `{"name":"ada","times":2}`, want: "hello ada hello ada "},
		{name: "empty arguments mean the zero input", args: ``, want: "hello  "},
		{name: "null means the zero input", args: `null`, want: "hello  "},
		{name: "wrong type names the field in JSON terms", args: `{"name":"ada","times":"2"}`, errField: "times", errText: "want an integer, got string"},
		{name: "unknown field is refused", args: `{"name":"ada","loud":true}`, errField: "loud", errText: "no such field"},
		{name: "not an object", args: `[1]`, errText: "want a JSON object, got array"},
		{name: "broken JSON", args: `{"name":`, errText: "not valid JSON"},
		{name: "trailing data", args: `{"name":"a"} {}`, errText: "unexpected data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := g.Run(context.Background(), tool.Call{Name: "greet", Args: json.RawMessage(tt.args)})
			if tt.errText == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if out.Text != tt.want {
					t.Errorf("text = %q, want %q", out.Text, tt.want)
				}
				return
			}
			var de *tool.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *tool.DecodeError", err)
			}
			if de.Field != tt.errField {
				t.Errorf("field = %q, want %q", de.Field, tt.errField)
			}
			if !strings.Contains(err.Error(), tt.errText) || !strings.Contains(err.Error(), "greet") {
				t.Errorf("error %q does not name the tool and say %q", err, tt.errText)
			}
		})
	}
}

func TestWithKeysDeclaresKeysFromInput(t *testing.T) {
	g := tool.New("greet", "", greet,
		tool.WithAccess(tool.Mutating),
		tool.WithKeys(func(in greetIn) tool.Keys { return tool.Keys{Writes: []string{"person:" + in.Name}} }))
	tests := []struct {
		name string
		args string
		want tool.Keys
	}{
		{"decoded input", `{"name":"ada"}`, tool.Keys{Writes: []string{"person:ada"}}},
		{"undecodable input runs alone", `{"name":1}`, tool.Keys{Exclusive: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tool.KeysOf(g, json.RawMessage(tt.args)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("keys = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWithoutKeysAccessDecidesKeys(t *testing.T) {
	g := tool.New("greet", "", greet, tool.WithAccess(tool.Mutating))
	if _, ok := g.(tool.Keyer); ok {
		t.Fatal("a typed tool without WithKeys implements Keyer")
	}
	want := tool.Keys{Writes: []string{"tool:greet"}}
	if got := tool.KeysOf(g, json.RawMessage(`{"name":"a"}`)); !reflect.DeepEqual(got, want) {
		t.Errorf("keys = %+v, want %+v", got, want)
	}
}

func TestNewPanicsOnProgramMistakes(t *testing.T) {
	tests := []struct {
		name string
		make func()
	}{
		{"input is not a struct", func() {
			tool.New("n", "", func(context.Context, string) (tool.Output, error) { return tool.Output{}, nil })
		}},
		{"input has no schema", func() {
			type bad struct{ C chan int }
			tool.New("n", "", func(context.Context, bad) (tool.Output, error) { return tool.Output{}, nil })
		}},
		{"keys function takes another type", func() {
			tool.New("n", "", greet, tool.WithKeys(func(string) tool.Keys { return tool.Keys{} }))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("New did not panic")
				}
			}()
			tt.make()
		})
	}
}

func TestRunPassesContextAndErrors(t *testing.T) {
	type key struct{}
	boom := errors.New("boom")
	g := tool.New("ctx", "", func(ctx context.Context, _ struct{}) (tool.Output, error) {
		if ctx.Value(key{}) != "v" {
			t.Error("context not passed")
		}
		return tool.Textf("n=%d", 3), boom
	})
	out, err := g.Run(context.WithValue(context.Background(), key{}, "v"), tool.Call{Args: json.RawMessage(`{}`)})
	if !errors.Is(err, boom) || out.Text != "n=3" {
		t.Errorf("Run = %q, %v; want n=3, boom", out.Text, err)
	}
}

func BenchmarkTypedRun(b *testing.B) {
	g := tool.New("greet", "", greet)
	call := tool.Call{Args: json.RawMessage(`{"name":"ada","times":1}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Run(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// A typed tool is a Decoder: what Decode returns, given back as Input,
// runs without decoding Args again; without Input it decodes Args.
func TestTypedDecodeAheadOfRun(t *testing.T) {
	var seen []greetIn
	gt := tool.New("greet", "Greet.", func(_ context.Context, in greetIn) (tool.Output, error) {
		seen = append(seen, in)
		return tool.Text("hi " + in.Name), nil
	})
	dec, ok := gt.(tool.Decoder)
	if !ok {
		t.Fatal("a typed tool is not a tool.Decoder")
	}
	in, err := dec.Decode(json.RawMessage(`{"name":"Ada","times":2}`))
	if err != nil {
		t.Fatal(err)
	}
	// Args that would not decode: Input is what runs.
	out, err := gt.Run(context.Background(), tool.Call{Args: json.RawMessage(`not json`), Input: in})
	if err != nil || out.Text != "hi Ada" || seen[0].Times != 2 {
		t.Fatalf("run with Input: %v %q %+v", err, out.Text, seen)
	}
	if _, err := dec.Decode(json.RawMessage(`{"name":`)); err == nil {
		t.Fatal("Decode accepted broken JSON")
	}
	// What Decode is given passed the schema, which is closed: a field
	// named in another case is refused there, before Decode.
	v, err := tool.NewValidator(gt.Spec())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"Name":"Ada"}`, `{"name":"Ada","extra":1}`} {
		if _, err := v.Check([]byte(args)); err == nil {
			t.Fatalf("the schema admits %s, which Decode would read as a known field or drop", args)
		}
	}
	// Input of another type is ignored: Args decide.
	out, err = gt.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"name":"Bo"}`), Input: 42})
	if err != nil || out.Text != "hi Bo" {
		t.Fatalf("run with a foreign Input: %v %q", err, out.Text)
	}
}
