package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// TestMetaIsRedactedThroughItsEscapes: Meta is JSON, and a configured
// secret JSON escapes (<, >, &, ", \, a newline) was written escaped in it,
// so masking the JSON text missed it and the client decoding the Meta (a
// rewritten file's diff) read the secret.
func TestMetaIsRedactedThroughItsEscapes(t *testing.T) {
	for _, secret := range []string{
		"Pg<pass>&3c8e1a9f",
		`quote"d-secret-42`,
		`back\slash-secret-42`,
		"plain-secret-0123",
	} {
		t.Run(secret, func(t *testing.T) {
			rd := redact.New(redact.Options{Secrets: []string{secret}})
			meta, err := json.Marshal(map[string]any{
				"diff":        "--- a/env\n+++ b/env\n-DB_PASSWORD=" + secret + "\n+DB_PASSWORD=from-vault\n",
				"list":        []any{"x " + secret, 1.5},
				secret + "-k": true,
			})
			if err != nil {
				t.Fatal(err)
			}
			f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
				return tool.Output{Text: "ok", Meta: meta}, nil
			}}
			r := runRound(t, New(Config{Tools: tool.NewSet(f), Redact: rd.Redact}), calls("t", `{}`)).Results[0]
			var got map[string]any
			if err := json.Unmarshal(r.Meta, &got); err != nil {
				t.Fatalf("meta %s is not JSON: %v", r.Meta, err)
			}
			text := string(r.Meta)
			for k, v := range got {
				b, _ := json.Marshal(v)
				text += "\n" + k + "\n" + string(b) + "\n"
				if s, ok := v.(string); ok {
					text += s
				}
			}
			if strings.Contains(text, secret) {
				t.Errorf("the secret reaches whoever decodes the meta: %s", r.Meta)
			}
			if d, _ := got["diff"].(string); !strings.Contains(d, "+DB_PASSWORD=from-vault\n") || !strings.Contains(d, redact.Mask) {
				t.Errorf("diff %q: want the change kept and the secret masked", d)
			}
		})
	}
}

// TestMetaWithoutSecretsIsKeptAsItIs: the decoding path returns the Meta's
// own bytes when nothing was masked.
func TestMetaWithoutSecretsIsKeptAsItIs(t *testing.T) {
	rd := redact.New(redact.Options{Secrets: []string{"configured-key-0123"}})
	meta := json.RawMessage(`{"z":"a\nb","a":1e3}`)
	f := &fake{spec: tool.Spec{Name: "t", Access: tool.ReadOnly}, run: func(ctx context.Context, c tool.Call) (tool.Output, error) {
		return tool.Output{Text: "ok", Meta: meta}, nil
	}}
	r := runRound(t, New(Config{Tools: tool.NewSet(f), Redact: rd.Redact}), calls("t", `{}`)).Results[0]
	if string(r.Meta) != string(meta) {
		t.Errorf("meta %s, want %s unchanged", r.Meta, meta)
	}
}
