package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
)

// knownKBs are the knowledge bases a thread may attach, as the server's
// Config.KnowledgeBases lists them now (a base added while the server runs
// is known from then on); none without it.
func (c *conn) knownKBs(ctx context.Context) ([]string, error) {
	if c.s.c.KnowledgeBases == nil {
		return nil, nil
	}
	return c.s.c.KnowledgeBases(ctx)
}

// defaults are initialize's defaults: the configured ones and the
// knowledge bases known now. A list that cannot be read leaves the bases
// out rather than failing initialize.
func (c *conn) defaults(ctx context.Context) *protocol.ThreadDefaults {
	kbs, err := c.knownKBs(ctx)
	if err != nil || len(kbs) == 0 {
		return c.s.c.Defaults
	}
	var d protocol.ThreadDefaults
	if c.s.c.Defaults != nil {
		d = *c.s.c.Defaults
	}
	d.KnowledgeBases = kbs
	return &d
}

// maxNamed bounds the known bases an error names.
const maxNamed = 20

// checkKBs refuses thread/start's knowledgeBases unless each is a base the
// server knows, naming the known ones, and keeps each name once.
func (c *conn) checkKBs(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > record.MaxThreadKBs {
		return nil, invalidParams("knowledgeBases names %d bases; attach at most %d", len(names), record.MaxThreadKBs)
	}
	known, err := c.knownKBs(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		if !slices.Contains(known, name) {
			list := "none (rein kb add makes one)"
			switch {
			case len(known) > maxNamed:
				list = fmt.Sprintf("%s and %d more", strings.Join(known[:maxNamed], ", "), len(known)-maxNamed)
			case len(known) > 0:
				list = strings.Join(known, ", ")
			}
			return nil, invalidParams("knowledge base %q is not one this server knows; known: %s", clip(name), list)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}
