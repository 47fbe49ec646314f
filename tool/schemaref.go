package tool

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// checkRefs refuses the schemas the validator could not survive. The
// library follows a reference by recursion, so a cycle of references that
// never steps into the value ({"$ref":"#"}, or allOf through a $ref back to
// itself) recurses until the stack overflows, which no recover catches. To
// find such cycles every reference must be followed, so only references
// that are JSON pointers into this schema ("#/$defs/x", "#") are accepted:
// they are what tool schemas use.
func checkRefs(raw []byte) error {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return err
	}
	c := refChecker{root: root, state: map[string]uint8{}}
	if err := c.scan(root, "", true); err != nil {
		return err
	}
	return c.visit("")
}

type refChecker struct {
	root any
	// state is 1 while a pointer is on the current in-place path, 2 once
	// every in-place path from it is known to end.
	state map[string]uint8
}

// scan refuses the references that cannot be followed: remote ones, anchors,
// dynamic references, and any reference under a nested $id (which would
// change what "#" means).
func (c *refChecker) scan(n any, ptr string, top bool) error {
	switch x := n.(type) {
	case map[string]any:
		for k, v := range x {
			switch k {
			case "$id":
				if !top {
					return fmt.Errorf("nested $id at %q is not supported", ptr)
				}
			case "$ref":
				ref, ok := v.(string)
				if !ok || ref != "#" && !strings.HasPrefix(ref, "#/") {
					return fmt.Errorf("$ref %v at %q: only references inside the schema (#/…) are supported", v, ptr)
				}
				if _, ok := c.resolve(ref); !ok {
					return fmt.Errorf("$ref %q at %q points at nothing", ref, ptr)
				}
			case "$dynamicRef", "$recursiveRef":
				return fmt.Errorf("%s at %q is not supported", k, ptr)
			}
			if err := c.scan(v, ptr+"/"+escape(k), false); err != nil {
				return err
			}
		}
	case []any:
		for i, v := range x {
			if err := c.scan(v, ptr+"/"+strconv.Itoa(i), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// visit walks the references and applicators that check the same value
// (not properties or items, which step into it) and fails on a cycle.
func (c *refChecker) visit(ptr string) error {
	switch c.state[ptr] {
	case 1:
		return fmt.Errorf("reference cycle through %q never reaches a value", "#"+ptr)
	case 2:
		return nil
	}
	c.state[ptr] = 1
	n, _ := c.resolve("#" + ptr)
	if m, ok := n.(map[string]any); ok {
		for k, v := range m {
			var next []string
			switch k {
			case "$ref":
				ref, _ := v.(string)
				next = append(next, strings.TrimPrefix(ref, "#"))
			case "allOf", "anyOf", "oneOf":
				if arr, ok := v.([]any); ok {
					for i := range arr {
						next = append(next, ptr+"/"+k+"/"+strconv.Itoa(i))
					}
				}
			case "not", "if", "then", "else":
				next = append(next, ptr+"/"+escape(k))
			case "dependentSchemas", "dependencies":
				if obj, ok := v.(map[string]any); ok {
					for dk := range obj {
						next = append(next, ptr+"/"+k+"/"+escape(dk))
					}
				}
			}
			for _, p := range next {
				if err := c.visit(p); err != nil {
					return err
				}
			}
		}
	}
	c.state[ptr] = 2
	return nil
}

// resolve follows a "#/a/b" pointer from the root.
func (c *refChecker) resolve(ref string) (any, bool) {
	p := strings.TrimPrefix(ref, "#")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	n := c.root
	if p == "" {
		return n, true
	}
	for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		switch x := n.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			n = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			n = x[i]
		default:
			return nil, false
		}
	}
	return n, true
}

// pointerEscaper escapes a JSON Pointer token (RFC 6901). Built once: a
// Replacer builds its tables (kilobytes) on first use, and escape runs for
// every property of every schema compiled.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escape(s string) string {
	return pointerEscaper.Replace(s)
}

// Keywords of a simple schema (see Validator.simple): the ones the walk
// checks completely, and annotations, which check nothing.
var (
	simpleKeywords = map[string]bool{
		"type": true, "enum": true, "minLength": true, "maxLength": true,
		"minimum": true, "maximum": true, "items": true, "minItems": true, "maxItems": true,
		"required": true, "properties": true, "additionalProperties": true,
		"$defs": true, "definitions": true,
	}
	annotations = map[string]bool{
		"description": true, "title": true, "default": true, "examples": true,
		"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	}
)

// simpleSchema reports whether the schema n (a node of the canonical tree
// root; top for the root itself) uses only simple keywords, and references
// only where the walk follows them: alone (with annotations) and by a
// pointer it resolves.
func simpleSchema(root, n any, top bool) bool {
	switch x := n.(type) {
	case bool:
		// false forbids everything, which the walk checks only as
		// additionalProperties (below).
		return x
	case map[string]any:
		if ref, ok := x["$ref"]; ok {
			return simpleRef(root, ref, x)
		}
		for k, v := range x {
			switch {
			case annotations[k]:
			case k == "$schema" || k == "$id":
				if !top {
					return false
				}
			case !simpleKeywords[k]:
				return false
			case k == "items":
				if !simpleSchema(root, v, false) {
					return false
				}
			case k == "additionalProperties":
				// true, false or {}: a real schema for the other
				// properties is not walked.
				if _, ok := v.(bool); !ok && !isTrueSchema(v) {
					return false
				}
			case k == "properties" || k == "$defs" || k == "definitions":
				m, ok := v.(map[string]any)
				if !ok {
					return false
				}
				for _, sub := range m {
					if !simpleSchema(root, sub, false) {
						return false
					}
				}
			}
		}
		return true
	}
	return false
}

func isTrueSchema(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

func simpleRef(root, ref any, node map[string]any) bool {
	for k := range node {
		if k != "$ref" && !annotations[k] {
			return false
		}
	}
	s, ok := ref.(string)
	if !ok {
		return false
	}
	c := refChecker{root: root}
	var target any
	switch {
	case s == "#":
		return true
	case strings.HasPrefix(s, "#/$defs/") && !strings.Contains(s[len("#/$defs/"):], "/"),
		strings.HasPrefix(s, "#/definitions/") && !strings.Contains(s[len("#/definitions/"):], "/"):
		// The walk looks the name up as written; a name needing escapes
		// would resolve differently.
		if strings.ContainsAny(s, "~%") {
			return false
		}
		target, ok = c.resolve(s)
	default:
		return false
	}
	return ok && target != nil
}
