package textcall

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/jsontext"
)

// typeSet is the set of JSON types a schema declares.
type typeSet uint8

const (
	typeString typeSet = 1 << iota
	typeNumber         // number and integer
	typeBoolean
	typeNull
	typeArray
	typeObject
)

// Catalog holds the declared parameter types of the tools known in a turn,
// so values are decoded as their schemas say. A nil *Catalog declares
// nothing.
//
// The schemas are read the first time a value is typed: most responses
// carry no text-format call, and a catalog made for every response would
// parse every tool's schema each round for nothing.
type Catalog struct {
	specs []llm.ToolSpec
	once  sync.Once
	tools map[string]map[string]typeSet
}

// NewCatalog returns the catalog of the tools' input schemas. Include every
// tool known this turn, also when native tools are off and including loaded
// deferred tools. A schema that does not parse declares nothing. The specs
// are read later, on first use, so they must not change meanwhile.
func NewCatalog(specs []llm.ToolSpec) *Catalog {
	return &Catalog{specs: specs}
}

func (c *Catalog) build() {
	c.tools = make(map[string]map[string]typeSet, len(c.specs))
	for _, sp := range c.specs {
		var s schema
		if len(sp.Schema) == 0 || json.Unmarshal(sp.Schema, &s) != nil {
			continue
		}
		params := make(map[string]typeSet, len(s.Properties))
		for name, p := range s.Properties {
			if p != nil {
				params[name] = p.types()
			}
		}
		c.tools[sp.Name] = params
	}
}

func (c *Catalog) types(tool, param string) typeSet {
	if c == nil {
		return 0
	}
	c.once.Do(c.build)
	return c.tools[tool][param]
}

// schema is the part of a JSON Schema that declares types.
type schema struct {
	Type       json.RawMessage    `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Items      json.RawMessage    `json:"items"`
	AnyOf      []*schema          `json:"anyOf"`
	OneOf      []*schema          `json:"oneOf"`
	AllOf      []*schema          `json:"allOf"`
}

// types returns type (a name or a list) plus object when properties are
// given, array when items are, and the types of every anyOf, oneOf and allOf
// branch.
func (s *schema) types() typeSet {
	var t typeSet
	var names []string
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		names = []string{one}
	} else {
		_ = json.Unmarshal(s.Type, &names) // not a list either: no type
	}
	for _, n := range names {
		switch n {
		case "string":
			t |= typeString
		case "number", "integer":
			t |= typeNumber
		case "boolean":
			t |= typeBoolean
		case "null":
			t |= typeNull
		case "array":
			t |= typeArray
		case "object":
			t |= typeObject
		}
	}
	if s.Properties != nil {
		t |= typeObject
	}
	if len(s.Items) > 0 {
		t |= typeArray
	}
	for _, list := range [][]*schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, b := range list {
			if b != nil {
				t |= b.types()
			}
		}
	}
	return t
}

// jsonType returns the type of a JSON text, or 0 when it is not valid JSON.
func jsonType(v string) typeSet {
	if v == "" || !json.Valid([]byte(v)) {
		return 0
	}
	switch v[0] {
	case '"':
		return typeString
	case '{':
		return typeObject
	case '[':
		return typeArray
	case 't', 'f':
		return typeBoolean
	case 'n':
		return typeNull
	}
	return typeNumber
}

// appendValue appends the JSON for a parameter value to b.
//
// Declared container types win first, then declared scalar types when the
// parameter cannot be a string; then string="true" or a declared plain string
// keeps the text verbatim; anything else is JSON when it parses and text
// when it does not.
func appendValue(b []byte, declared typeSet, raw bool, v string) []byte {
	trimmed := strings.TrimSpace(v)
	got := jsonType(trimmed)
	switch {
	case got&declared&(typeArray|typeObject) != 0,
		declared != 0 && declared&typeString == 0 && got&declared != 0:
		return appendCompact(b, trimmed)
	case raw || declared == typeString:
		return jsontext.AppendString(b, v)
	case got != 0:
		return appendCompact(b, trimmed)
	}
	return jsontext.AppendString(b, v)
}

func appendCompact(b []byte, v string) []byte {
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, []byte(v)) != nil {
		// Unreachable for values that passed json.Valid; keep the text.
		return jsontext.AppendString(b, v)
	}
	return buf.Bytes()
}
