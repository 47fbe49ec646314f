package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator checks the arguments of calls to one tool against the tool's
// input schema, compiled once. It is safe for concurrent use.
//
// The compiled schema is the judge of validity: arguments are accepted
// exactly when the schema accepts them. The messages, though, come from a
// walk of our own that names every missing or wrong field with what the
// schema asks for, because a model fixes a call from the message alone
// (DeepTutor's guard said "missing" for an empty string, W16). For the
// plain schemas most tools have, that walk is complete and judges alone.
type Validator struct {
	name     string
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
	// fields describes the top-level fields, for the invalid-JSON message.
	fields string
	// emptyOK: {} is valid, so a call without arguments needs no decoding
	// or walking (a verdict computed once, not a guess).
	emptyOK bool
	// simple: the schema uses only keywords the walk checks completely,
	// so the walk alone judges and the library's slower, allocating
	// validation is skipped. FuzzCheck holds the two to the same verdicts.
	simple bool
	// plan is the schema as Accept reads the arguments' bytes against it,
	// when it is simple and plain enough (acceptbytes.go); else nil.
	plan *bytePlan
	// tree is the schema decoded as plain JSON, kept when it is not
	// simple: a check first counts what the library would do with it
	// (schemacost.go).
	tree any
	// insts is the program size of each of its patterns.
	insts map[string]int
	// closed remembers, per object schema walked, whether it allows no
	// other fields: working it out (isFalse, a reflective look at the
	// whole additionalProperties schema) cost more than the rest of the
	// walk of every call.
	closed sync.Map // *jsonschema.Schema → bool
}

// ProblemKind classifies one thing wrong with a call's arguments.
type ProblemKind string

// Problem kinds.
const (
	// ProblemSyntax: the arguments are not JSON.
	ProblemSyntax ProblemKind = "syntax"
	// ProblemNotObject: the arguments are JSON but not an object.
	ProblemNotObject ProblemKind = "not_object"
	// ProblemMissing: a required key is absent.
	ProblemMissing ProblemKind = "missing"
	// ProblemEmpty: the key is present with an empty string where the
	// schema needs a non-empty one.
	ProblemEmpty ProblemKind = "empty"
	// ProblemNull: the key is present with null where a value is needed.
	ProblemNull ProblemKind = "null"
	// ProblemType: the value has the wrong JSON type.
	ProblemType ProblemKind = "type"
	// ProblemUnknown: the key is not a field of the schema, which allows
	// no others.
	ProblemUnknown ProblemKind = "unknown"
	// ProblemInvalid: any other schema violation (enum, bounds, pattern…).
	ProblemInvalid ProblemKind = "invalid"
)

// Problem is one thing wrong with a call's arguments.
type Problem struct {
	Kind ProblemKind
	// Field is the path of the field ("path", "questions[0].prompt"), or
	// empty for the arguments as a whole.
	Field string
	// Message is the sentence given to the model.
	Message string
}

// ArgsError says why a call's arguments were refused. Its Error text is
// written for the model: every problem on its own line, then how to retry.
type ArgsError struct {
	Tool     string
	Problems []Problem
}

func (e *ArgsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for %s; the call was not run:\n", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("- ")
		b.WriteString(p.Message)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "An identical call will be refused again: fix the arguments above and call %s again.", e.Tool)
	return b.String()
}

// Has reports whether the error lists a problem of kind k for field.
func (e *ArgsError) Has(k ProblemKind, field string) bool {
	for _, p := range e.Problems {
		if p.Kind == k && p.Field == field {
			return true
		}
	}
	return false
}

// NewValidator compiles the input schema of s. A nil schema accepts any
// object. It fails when the schema is not valid JSON Schema.
func NewValidator(s Spec) (v *Validator, err error) {
	raw := bytes.TrimSpace(s.Schema)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte(`{"type":"object"}`)
	}
	if d := jsonDepth(raw); d > maxSchemaDepth {
		return nil, fmt.Errorf("tool %s: input schema: nested %d levels deep; at most %d are taken", s.Name, d, maxSchemaDepth)
	}
	root := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, root); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	// Check the schema as the library read it: encoding/json matches keys
	// without regard to case, so {"$rEf": "#"} is a reference too.
	canon, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	if err := checkRefs(canon); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	var tree any
	if err := json.Unmarshal(canon, &tree); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	insts := map[string]int{}
	if err := checkPatterns(tree, "", insts); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	if err := newCostCounter(tree, insts).inPlace("", tree); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	// Providers accept schemas that name any draft; refusing every call of
	// a tool over its $schema URI would make it unusable, so an unsupported
	// one is read as 2020-12, which is what tool schemas are written in.
	switch root.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		root.Schema = ""
	}
	// The library asserts its invariants with panics; a bad schema from a
	// third party (MCP) must come back as an error, not crash the turn.
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("tool %s: input schema: %v", s.Name, p)
		}
	}()
	res, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	v = &Validator{name: s.Name, root: root, resolved: res}
	v.fields = v.describeFields()
	v.simple = simpleSchema(tree, tree, true)
	if !v.simple {
		v.tree, v.insts = tree, insts
	} else if p := planOf(walker{root: root, v: v}, root, 0); p != nil && p.kind == kindObject {
		v.plan = p
	}
	_, emptyErr := v.Check([]byte("{}"))
	v.emptyOK = emptyErr == nil
	return v, nil
}

// Check decodes args and checks them against the schema. It returns the
// decoded object, or an *ArgsError listing every problem found. Empty
// arguments are read as {}: providers send an empty string for a call
// without arguments.
func (v *Validator) Check(args []byte) (obj map[string]any, err error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if v.emptyOK && string(trimmed) == "{}" {
		return map[string]any{}, nil
	}
	var val any
	if err := json.Unmarshal(trimmed, &val); err != nil {
		return nil, v.fail(Problem{Kind: ProblemSyntax, Message: fmt.Sprintf(
			"arguments are not valid JSON: %s; send one JSON object%s", syntaxDetail(err), v.fields)})
	}
	obj, ok := val.(map[string]any)
	if !ok {
		return nil, v.fail(Problem{Kind: ProblemNotObject, Message: fmt.Sprintf(
			"arguments must be a JSON object, got %s; send one JSON object%s", describeValue(val), v.fields)})
	}
	if v.simple {
		w := walker{root: v.root, v: v}
		w.walk(v.root, obj, "", 0)
		if len(w.problems) > 0 {
			return nil, v.fail(w.problems...)
		}
		return obj, nil
	}
	defer func() {
		if p := recover(); p != nil {
			obj, err = nil, v.fail(Problem{Kind: ProblemInvalid, Message: fmt.Sprintf("the arguments could not be checked: %v", p)})
		}
	}()
	if n := newCostCounter(v.tree, v.insts).count("", v.tree, obj); n > maxApplications {
		return nil, v.fail(Problem{Kind: ProblemInvalid, Message: fmt.Sprintf(
			"the arguments would take more than %d schema checks (definitions applied many times over, or long text matched against long patterns); send a smaller value", maxApplications)})
	}
	verr := v.resolved.Validate(obj)
	if verr == nil {
		return obj, nil
	}
	w := walker{root: v.root, v: v}
	w.walk(v.root, obj, "", 0)
	if len(w.problems) == 0 {
		w.problems = append(w.problems, Problem{Kind: ProblemInvalid, Message: libraryMessage(verr)})
	}
	return nil, v.fail(w.problems...)
}

func (v *Validator) fail(ps ...Problem) *ArgsError {
	return &ArgsError{Tool: v.name, Problems: ps}
}

func syntaxDetail(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

// describeFields lists the top-level fields as " with the fields: a
// (string, required), b (integer)", or "" when the schema declares none.
func (v *Validator) describeFields() string {
	s := v.deref(v.root, 0)
	if s == nil || len(s.Properties) == 0 {
		return ""
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := sortedKeys(s.Properties)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		d := typeName(v.deref(s.Properties[n], 0))
		if req[n] {
			d += ", required"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, d))
	}
	return " with the fields: " + strings.Join(parts, ", ")
}

func (v *Validator) deref(s *jsonschema.Schema, depth int) *jsonschema.Schema {
	return walker{root: v.root}.deref(s, depth)
}

// walker collects the problems of a value the schema refused. It reports
// only what the schema's own keywords refuse, so it never invents a problem;
// what it cannot explain is left to the library's message.
type walker struct {
	root     *jsonschema.Schema
	v        *Validator // for its closed cache; nil: none
	problems []Problem
}

// maxDepth bounds a chain of $ref. NewValidator refuses reference
// cycles, so a chain ends well before; the bound only guards the walk.
const maxDepth = 1 << 10

func (w *walker) add(k ProblemKind, field, msg string) {
	w.problems = append(w.problems, Problem{Kind: k, Field: field, Message: msg})
}

// deref follows local references (#/$defs/X, #/definitions/X) and returns
// nil for anything else it cannot follow.
func (w walker) deref(s *jsonschema.Schema, depth int) *jsonschema.Schema {
	for s != nil && s.Ref != "" {
		if depth > maxDepth {
			return nil
		}
		depth++
		var defs map[string]*jsonschema.Schema
		var name string
		switch {
		case s.Ref == "#":
			s = w.root
			continue
		case strings.HasPrefix(s.Ref, "#/$defs/"):
			defs, name = w.root.Defs, strings.TrimPrefix(s.Ref, "#/$defs/")
		case strings.HasPrefix(s.Ref, "#/definitions/"):
			defs, name = w.root.Definitions, strings.TrimPrefix(s.Ref, "#/definitions/")
		default:
			return nil
		}
		next, ok := defs[name]
		if !ok {
			return nil
		}
		s = next
	}
	return s
}

// walk has no depth limit of its own: the value is decoded JSON, whose
// nesting encoding/json bounds, and a schema only recurses through it.
func (w *walker) walk(s *jsonschema.Schema, val any, path string, depth int) {
	s = w.deref(s, 0)
	if s == nil {
		return
	}
	// The label is formatted only when a problem is reported: a valid
	// call pays nothing for it.
	label := fieldLabel(path)
	if want := schemaTypes(s); len(want) > 0 && !typeMatches(want, val) {
		if val == nil {
			w.add(ProblemNull, path, fmt.Sprintf("%s is null; it needs %s%s", label, article(typeName(s)), describe(s)))
		} else {
			w.add(ProblemType, path, fmt.Sprintf("%s must be %s, got %s%s", label, article(typeName(s)), describeValue(val), describe(s)))
		}
		return
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, val) {
		w.add(ProblemInvalid, path, fmt.Sprintf("%s must be one of %s, got %s", label, enumList(s.Enum), describeValue(val)))
		return
	}
	switch x := val.(type) {
	case string:
		w.walkString(s, x, path, label)
	case float64:
		w.walkNumber(s, x, path, label)
	case []any:
		w.walkArray(s, x, path, label, depth)
	case map[string]any:
		w.walkObject(s, x, path, depth)
	}
}

func (w *walker) walkString(s *jsonschema.Schema, x, path string, label fieldLabel) {
	n := utf8.RuneCountInString(x)
	switch {
	case x == "" && s.MinLength != nil && *s.MinLength >= 1:
		w.add(ProblemEmpty, path, fmt.Sprintf("%s is an empty string; it needs a non-empty value%s", label, describe(s)))
	case s.MinLength != nil && n < *s.MinLength:
		w.add(ProblemInvalid, path, fmt.Sprintf("%s is too short: %d characters, at least %d", label, n, *s.MinLength))
	case s.MaxLength != nil && n > *s.MaxLength:
		w.add(ProblemInvalid, path, fmt.Sprintf("%s is too long: %d characters, at most %d", label, n, *s.MaxLength))
	}
}

func (w *walker) walkNumber(s *jsonschema.Schema, x float64, path string, label fieldLabel) {
	switch {
	case s.Minimum != nil && x < *s.Minimum:
		w.add(ProblemInvalid, path, fmt.Sprintf("%s is %v, below the minimum %v", label, x, *s.Minimum))
	case s.Maximum != nil && x > *s.Maximum:
		w.add(ProblemInvalid, path, fmt.Sprintf("%s is %v, above the maximum %v", label, x, *s.Maximum))
	}
}

func (w *walker) walkArray(s *jsonschema.Schema, x []any, path string, label fieldLabel, depth int) {
	if s.MinItems != nil && len(x) < *s.MinItems {
		w.add(ProblemInvalid, path, fmt.Sprintf("%s has %d items, at least %d needed", label, len(x), *s.MinItems))
	}
	if s.MaxItems != nil && len(x) > *s.MaxItems {
		w.add(ProblemInvalid, path, fmt.Sprintf("%s has %d items, at most %d allowed", label, len(x), *s.MaxItems))
	}
	if s.Items == nil {
		return
	}
	for i, el := range x {
		w.walk(s.Items, el, path+"["+strconv.Itoa(i)+"]", depth+1)
	}
}

func (w *walker) walkObject(s *jsonschema.Schema, x map[string]any, path string, depth int) {
	for _, r := range s.Required {
		if _, ok := x[r]; ok {
			continue
		}
		sub := w.deref(s.Properties[r], 0)
		var what string
		if sub != nil {
			what = " (" + typeName(sub) + ")" + describe(sub)
		}
		w.add(ProblemMissing, join(path, r), fmt.Sprintf("missing required field %q%s", join(path, r), what))
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	closed := w.closed(s)
	var unknown []string
	for _, k := range keys {
		sub, ok := s.Properties[k]
		if !ok {
			if closed {
				unknown = append(unknown, k)
			}
			continue
		}
		w.walk(sub, x[k], join(path, k), depth+1)
	}
	if len(unknown) > 0 {
		allowed := "none"
		if len(s.Properties) > 0 {
			allowed = strings.Join(sortedKeys(s.Properties), ", ")
		}
		for _, k := range unknown {
			w.add(ProblemUnknown, join(path, k), fmt.Sprintf("unknown field %q; the fields allowed here are: %s", join(path, k), allowed))
		}
	}
}

// closed reports whether the object schema s allows no fields but its
// properties, once per schema of the validator.
func (w *walker) closed(s *jsonschema.Schema) bool {
	if w.v == nil {
		return isFalse(s.AdditionalProperties) && len(s.PatternProperties) == 0
	}
	if c, ok := w.v.closed.Load(s); ok {
		return c.(bool)
	}
	c := isFalse(s.AdditionalProperties) && len(s.PatternProperties) == 0
	w.v.closed.Store(s, c)
	return c
}

// isFalse reports whether s is the schema false, which the library reads
// as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldLabel names a field in a problem's message: "field \"a.b\"", or
// "the arguments" for the whole object. It is a path until formatted.
type fieldLabel string

func (l fieldLabel) String() string {
	if l == "" {
		return "the arguments"
	}
	return fmt.Sprintf("field %q", string(l))
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeMatches(want []string, v any) bool {
	got := jsonTypeOf(v)
	for _, t := range want {
		if t == got || t == "number" && got == "integer" {
			return true
		}
	}
	return false
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if reflect.DeepEqual(normalize(e), v) {
			return true
		}
	}
	return false
}

// normalize turns the enum values the library decoded into the shapes
// encoding/json gives the arguments, so they compare with DeepEqual.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}

// typeName says what a schema wants: "string", "array of string",
// "one of \"a\", \"b\"", "string or null".
func typeName(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if len(s.Enum) > 0 {
		return "one of " + enumList(s.Enum)
	}
	ts := schemaTypes(s)
	if len(ts) == 0 {
		return "any value"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		if t == "array" && s.Items != nil {
			if it := schemaTypes(s.Items); len(it) == 1 {
				t = "array of " + it[0]
			}
		}
		out[i] = t
	}
	return strings.Join(out, " or ")
}

func article(t string) string {
	if strings.HasPrefix(t, "one of") || strings.HasPrefix(t, "any") {
		return t
	}
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

// describe returns ": DESCRIPTION" cut to a sentence's length, or "".
func describe(s *jsonschema.Schema) string {
	d := strings.TrimSpace(s.Description)
	if d == "" {
		return ""
	}
	const max = 200
	if len(d) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + "…"
	}
	return ": " + strings.Join(strings.Fields(d), " ")
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		b, err := json.Marshal(e)
		if err != nil {
			parts[i] = fmt.Sprint(e)
			continue
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// describeValue names a value's type and shows it when short.
func describeValue(v any) string {
	t := jsonTypeOf(v)
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 40 {
		return article(t)
	}
	return fmt.Sprintf("%s (%s)", article(t), s)
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// libraryMessage keeps the innermost part of a validation error: the
// library prefixes every level with "validating LOCATION: ".
func libraryMessage(err error) string {
	msg := err.Error()
	loc := ""
	for {
		i := strings.Index(msg, "validating ")
		if i != 0 {
			break
		}
		j := strings.Index(msg, ": ")
		if j < 0 {
			break
		}
		loc = msg[len("validating "):j]
		msg = msg[j+2:]
	}
	if loc != "" && loc != "root" && loc != "<anonymous schema>" {
		return fmt.Sprintf("the arguments do not match the schema at %s: %s", loc, msg)
	}
	return "the arguments do not match the schema: " + msg
}
