package dispatch

import (
	"bytes"
	"encoding/json"
)

// redactMeta cleans a result's Meta: the store keeps it, and a UI shows
// it (a fetched page's URL, a command's output, a rewritten file's diff).
// Meta without an escape holds every string as its bytes, so masking the
// JSON text finds every secret; an escape (\n, \", \u003c for <) would hide
// a secret written with it from a mask of the text, so such Meta is
// decoded, each string (key or value) masked, and encoded again. Meta that
// cannot be cleaned is dropped rather than kept with the secret.
func (d *Dispatcher) redactMeta(m json.RawMessage) json.RawMessage {
	if d.cfg.Redact == nil || len(m) == 0 {
		return m
	}
	if bytes.IndexByte(m, '\\') < 0 {
		s := string(m)
		c := d.cfg.Redact(s)
		if c == s {
			return m
		}
		if !json.Valid([]byte(c)) {
			return nil
		}
		return json.RawMessage(c)
	}
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	v, changed := redactValue(v, d.cfg.Redact)
	if !changed {
		return m
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// redactValue masks every string of a decoded JSON value, keys included,
// and says whether any changed.
func redactValue(v any, redact func(string) string) (any, bool) {
	switch x := v.(type) {
	case string:
		c := redact(x)
		return c, c != x
	case []any:
		changed := false
		for i, e := range x {
			var ch bool
			x[i], ch = redactValue(e, redact)
			changed = changed || ch
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			ck := redact(k)
			ce, ch := redactValue(e, redact)
			changed = changed || ch || ck != k
			out[ck] = ce
		}
		return out, changed
	}
	return v, false
}
