package tool

import (
	"fmt"
	"reflect"
	"regexp/syntax"
	"strconv"
)

// A schema is a graph, not a tree: two references to one definition in an
// allOf check the value against it twice, and forty such definitions, each
// referring twice to the next, check it 2^40 times in a schema of two
// kilobytes. The library validates without a budget, so a schema from a
// client (turn/start's output) or a third party (an MCP tool) could hold a
// goroutine for ever. These bounds are checked before the library runs.
const (
	// maxSchemaDepth bounds the nesting of a schema's JSON: the library
	// decodes a schema in time quadratic in its depth (6,000 levels, 60
	// KB, took 13 s). Real schemas nest a few dozen levels at most.
	maxSchemaDepth = 128
	// maxApplications bounds the schemas one check applies, summed over
	// the value's nodes: far above what a real schema and a real value
	// take, far below what makes a check last seconds.
	maxApplications = 1 << 20
)

// jsonDepth returns the deepest nesting of objects and arrays in raw,
// which need not be valid JSON.
func jsonDepth(raw []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// costCounter counts the schema applications a check makes: each schema
// applied to a value node once per path that reaches it, as the library
// does. It is memoised per schema node and value node, so counting takes
// time in proportion to their product, not to the count.
type costCounter struct {
	refs refChecker
	memo map[costKey]int
	// insts is the program size of each pattern (checkPatterns); matching
	// one against a string counts in proportion to both.
	insts map[string]int
}

type costKey struct {
	schema string  // JSON pointer of the schema node
	value  uintptr // identity of the value node; 0 for a scalar
	size   int     // a string's length, plus one: its matching's cost
}

func newCostCounter(tree any, insts map[string]int) *costCounter {
	return &costCounter{refs: refChecker{root: tree}, memo: map[costKey]int{}, insts: insts}
}

// matchCost is the budget matching pattern p against text of n bytes
// takes.
func (c *costCounter) matchCost(p string, n int) int {
	return n * c.insts[p] / matchStepsPerCheck
}

// inPlace refuses a schema any of whose nodes applies more than
// maxApplications schemas to one value in place (references, allOf,
// anyOf, oneOf, not, if/then/else): such a schema can never check a value.
func (c *costCounter) inPlace(ptr string, n any) error {
	switch x := n.(type) {
	case map[string]any:
		if got := c.count(ptr, x, nil); got > maxApplications {
			return fmt.Errorf("the subschema at %q applies more than %d schemas to one value (references to one definition repeated in allOf/anyOf/oneOf multiply): refer to each definition once", "#"+ptr, maxApplications)
		}
		for k, v := range x {
			if err := c.inPlace(ptr+"/"+escape(k), v); err != nil {
				return err
			}
		}
	case []any:
		for i, v := range x {
			if err := c.inPlace(ptr+"/"+strconv.Itoa(i), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// count returns the schemas applied when the schema at ptr checks val,
// or more than maxApplications once it is over.
func (c *costCounter) count(ptr string, s any, val any) int {
	m, ok := s.(map[string]any)
	if !ok {
		return 1
	}
	key := costKey{schema: ptr, value: identity(val)}
	str, isString := val.(string)
	if isString {
		key.size = len(str) + 1
	}
	if n, ok := c.memo[key]; ok {
		return n
	}
	n := 1
	if p, ok := m["pattern"].(string); ok && isString {
		n += c.matchCost(p, len(str))
	}
	add := func(p string, sub any, v any) {
		if n <= maxApplications {
			n += c.count(p, sub, v)
		}
	}
	// In place: the same value, checked again.
	for k, v := range m {
		switch k {
		case "$ref":
			if ref, ok := v.(string); ok {
				if target, ok := c.refs.resolve(ref); ok {
					add(ref[1:], target, val)
				}
			}
		case "allOf", "anyOf", "oneOf":
			if arr, ok := v.([]any); ok {
				for i, sub := range arr {
					add(ptr+"/"+k+"/"+strconv.Itoa(i), sub, val)
				}
			}
		case "not", "if", "then", "else":
			add(ptr+"/"+k, v, val)
		case "dependentSchemas", "dependencies":
			if obj, ok := v.(map[string]any); ok {
				for dk, sub := range obj {
					add(ptr+"/"+k+"/"+escape(dk), sub, val)
				}
			}
		}
	}
	// Stepping in: each field or element, checked by the schemas that
	// may apply to it (all of them, for an upper bound).
	switch x := val.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		patterns, _ := m["patternProperties"].(map[string]any)
		for name, child := range x {
			if sub, ok := props[name]; ok {
				add(ptr+"/properties/"+escape(name), sub, child)
			}
			for p, sub := range patterns {
				n += c.matchCost(p, len(name))
				add(ptr+"/patternProperties/"+escape(p), sub, child)
			}
			for _, k := range [...]string{"additionalProperties", "unevaluatedProperties"} {
				if sub, ok := m[k]; ok {
					add(ptr+"/"+k, sub, child)
				}
			}
			if sub, ok := m["propertyNames"]; ok {
				add(ptr+"/propertyNames", sub, name)
			}
		}
	case []any:
		prefix, _ := m["prefixItems"].([]any)
		tuple, _ := m["items"].([]any) // draft 7
		for i, child := range x {
			if i < len(prefix) {
				add(ptr+"/prefixItems/"+strconv.Itoa(i), prefix[i], child)
			}
			if i < len(tuple) {
				add(ptr+"/items/"+strconv.Itoa(i), tuple[i], child)
			}
			for _, k := range [...]string{"items", "additionalItems", "contains", "unevaluatedItems"} {
				if sub, ok := m[k]; ok {
					if _, isTuple := sub.([]any); !isTuple {
						add(ptr+"/"+k, sub, child)
					}
				}
			}
		}
	}
	n = min(n, maxApplications+1)
	c.memo[key] = n
	return n
}

// identity names a decoded JSON object or array by its address; scalars
// are all alike to the count.
func identity(v any) uintptr {
	switch v.(type) {
	case map[string]any, []any:
		return reflect.ValueOf(v).Pointer()
	}
	return 0
}

// Matching a pattern takes time in proportion to its program times the
// text: a 54 KB pattern (18,008 instructions) took 4.5 s to match 10 KB of
// a model's answer.
const (
	// maxPatternInsts bounds the program a schema's pattern (or a
	// patternProperties key) compiles to. Real patterns (an email, a date,
	// an id) compile to under a hundred instructions; the longest
	// repetition Go takes, ^.{1,1000}$, to 2,003.
	maxPatternInsts = 4096
	// matchStepsPerCheck is how many instruction-characters of matching
	// count as one schema application in the budget: a check may match
	// about 10^8 (2.5 s at the worst, measured under load), so only a long
	// pattern against a long text is refused.
	matchStepsPerCheck = 100
)

// checkPatterns refuses a pattern of the schema tree n whose program is
// over maxPatternInsts, and notes each pattern's size in insts.
func checkPatterns(n any, ptr string, insts map[string]int) error {
	switch x := n.(type) {
	case map[string]any:
		for k, v := range x {
			switch p, isString := v.(string); {
			case k == "pattern" && isString:
				if err := patternSize(p, ptr+"/pattern", insts); err != nil {
					return err
				}
			case k == "patternProperties":
				if props, ok := v.(map[string]any); ok {
					for p := range props {
						if err := patternSize(p, ptr+"/patternProperties", insts); err != nil {
							return err
						}
					}
				}
			}
			if err := checkPatterns(v, ptr+"/"+escape(k), insts); err != nil {
				return err
			}
		}
	case []any:
		for i, v := range x {
			if err := checkPatterns(v, ptr+"/"+strconv.Itoa(i), insts); err != nil {
				return err
			}
		}
	}
	return nil
}

// patternSize refuses p when its program is over maxPatternInsts; a
// pattern that does not parse is left to the library, which says why.
func patternSize(p, ptr string, insts map[string]int) error {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil
	}
	n := len(prog.Inst)
	if n > maxPatternInsts {
		return fmt.Errorf("the pattern at %q compiles to %d instructions; at most %d are taken: write a shorter pattern", "#"+ptr, n, maxPatternInsts)
	}
	insts[p] = n
	return nil
}
