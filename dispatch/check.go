package dispatch

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/reinhq/rein/tool"
)

// check looks a call over before it may run: the tool is in this turn's
// set and the arguments match its schema. It fills in the call's tool,
// arguments, keys and deadline, and returns the refusal text, or "".
func (r *Round) check(k *call) (refusal string) {
	d := r.d
	name := k.llm.Name
	// Spec, Keys and the schema are tools' code; a panic there refuses the
	// call instead of killing the stream reader.
	defer func() {
		if p := recover(); p != nil {
			refusal = errorText(fmt.Sprintf("%s could not be checked: it panicked", name), d.redact(fmt.Sprint(p)), "")
		}
	}()
	t, ok := d.cfg.Tools.Get(name)
	if !ok {
		return d.cfg.Tools.NotFound(name)
	}
	spec := t.Spec()
	v, err := compiledSchemas.get(spec)
	if err != nil {
		return errorText(fmt.Sprintf("%s cannot be called: its input schema is invalid", name), d.redact(err.Error()), "")
	}
	args := []byte(k.llm.Args)
	if err := v.Accept(args); err != nil {
		return d.redact(err.Error())
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	k.tool, k.args, k.pauses = t, args, spec.Pauses
	if dec, ok := t.(tool.Decoder); ok {
		// Here, on the stream reader's goroutine (tool.Decoder says why);
		// a failure is the tool's to report when it runs.
		if in, err := dec.Decode(args); err == nil {
			k.input = in
		}
	}
	k.timeout = d.timeout(spec)
	if !k.pauses {
		k.keys = tool.KeysOf(t, args)
	}
	return ""
}

// timeout is a call's deadline: the configured override, else the tool's
// own, else the default.
func (d *Dispatcher) timeout(s tool.Spec) time.Duration {
	if t := d.cfg.Timeouts[s.Name]; t > 0 {
		return t
	}
	if s.Timeout > 0 {
		return s.Timeout
	}
	return d.cfg.DefaultTimeout
}

// duplicateOf returns the earlier runnable call with the same tool and the
// same arguments (compared as canonical JSON, keys sorted), or nil.
func (r *Round) duplicateOf(k *call) *call {
	for _, e := range r.calls[:k.index] {
		if !e.runnable || e.llm.Name != k.llm.Name {
			continue
		}
		if canonical(e) == canonical(k) {
			return e
		}
	}
	return nil
}

// canonical computes the call's canonical arguments once, when a round
// has two calls of one tool to compare.
func canonical(k *call) string {
	if k.canon == "" {
		k.canon = CanonicalArgs(string(k.args))
	}
	return k.canon
}

// validators caches compiled schemas by tool name; a tool whose schema
// changes (a reloaded MCP server) is compiled again.
type validators struct {
	mu sync.RWMutex
	m  map[string]*compiled
}

type compiled struct {
	schema string
	v      *tool.Validator
	err    error
}

// compiledSchemas is shared by every dispatcher: a session makes an engine
// (and so a dispatcher) per turn, and compiling a schema costs tens of
// microseconds and a hundred allocations, which every turn paid again for
// each tool it called. A validator depends on nothing but the tool's name
// and schema, and is safe for concurrent use. It holds one entry per tool
// name seen.
var compiledSchemas validators

func (c *validators) get(s tool.Spec) (*tool.Validator, error) {
	c.mu.RLock()
	e := c.m[s.Name]
	c.mu.RUnlock()
	if e != nil && e.schema == string(s.Schema) {
		return e.v, e.err
	}
	v, err := tool.NewValidator(s)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*compiled)
	}
	c.m[s.Name] = &compiled{schema: string(s.Schema), v: v, err: err}
	c.mu.Unlock()
	return v, err
}
