package server_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reinhq/rein/server"
)

var update = flag.Bool("update", false, "rewrite docs/protocol.schema.json from the types")

const schemaFile = "../docs/protocol.schema.json"

// TestSchemaIsCurrent is the golden check of the committed schema: it fails
// when a protocol type changed and the schema was not regenerated (go
// generate ./server).
func TestSchemaIsCurrent(t *testing.T) {
	got, err := server.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v; run go generate ./server", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date with the protocol types; run go generate ./server", schemaFile)
	}
	again, _ := server.Schema()
	if !bytes.Equal(got, again) {
		t.Error("the schema is not deterministic")
	}
}

// checkNotifications validates the params of every notification a client
// saw against the schema, so the schema describes what is sent.
func checkNotifications(t *testing.T, seen []msg) {
	t.Helper()
	raw, err := server.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Notifications map[string]struct {
			Params map[string]string `json:"params"`
		} `json:"x-notifications"`
		Defs map[string]*jsonschema.Schema `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	resolved := map[string]*jsonschema.Resolved{}
	for _, m := range seen {
		n, ok := doc.Notifications[m.Method]
		if !ok {
			t.Errorf("notification %s is not in the schema", m.Method)
			continue
		}
		name := strings.TrimPrefix(n.Params["$ref"], "#/$defs/")
		rs := resolved[name]
		if rs == nil {
			s := doc.Defs[name]
			s.Schema = "https://json-schema.org/draft/2020-12/schema"
			if rs, err = s.Resolve(nil); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			resolved[name] = rs
		}
		var v any
		if err := json.Unmarshal(m.Params, &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Errorf("%s params %s do not match the schema: %v", m.Method, m.Params, err)
		}
	}
}
