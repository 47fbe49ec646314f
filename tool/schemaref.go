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

func escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
