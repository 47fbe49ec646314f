package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/protocol"
	"github.com/reinhq/rein/record"
)

func init() {
	// knowledge/list is registered here, with the rest of the server's
	// knowledge bases, rather than in the method table's file.
	methods[protocol.MethodKnowledgeList] = (*conn).knowledgeList
	protocolMethods = append(protocolMethods, methodTypes{protocol.MethodKnowledgeList, protocol.KnowledgeListParams{}, protocol.KnowledgeListResult{},
		"Lists the knowledge bases thread/start may attach, as they are now (rein kb adds and removes them in the store, from any process)."})
}

// knownKBs are the knowledge bases a thread of this connection may
// attach, as the server's Config.KnowledgeBases lists them now (a base
// added while the server runs is known from then on), less those its named
// token is not granted (NamedToken.KnowledgeBases); none without a list.
func (c *conn) knownKBs(ctx context.Context) ([]string, error) {
	if c.s.c.KnowledgeBases == nil {
		return nil, nil
	}
	all, err := c.s.c.KnowledgeBases(ctx)
	if err != nil {
		return nil, err
	}
	grant, limited := c.s.grantedKBs(c.who)
	if !limited {
		return all, nil
	}
	return slices.DeleteFunc(slices.Clone(all), func(name string) bool { return !slices.Contains(grant, name) }), nil
}

// grantedKBs are the knowledge bases who's token is granted, and whether
// it is limited to them: the admin and a named token without a grant are
// not.
func (s *Server) grantedKBs(who principal) ([]string, bool) {
	if who.admin() {
		return nil, false
	}
	for _, t := range s.c.NamedTokens {
		if t.Name == who.name {
			return t.KnowledgeBases, t.KnowledgeBases != nil
		}
	}
	// A name no token has (removed since its cookie was set): nothing.
	return nil, true
}

// knowledgeList answers knowledge/list: the bases this connection may
// attach now.
func (c *conn) knowledgeList(ctx context.Context, raw json.RawMessage) (any, error) {
	if _, err := decode[protocol.KnowledgeListParams](raw); err != nil {
		return nil, err
	}
	kbs, err := c.knownKBs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the knowledge bases: %w", err)
	}
	return protocol.KnowledgeListResult{KnowledgeBases: nonNil(kbs)}, nil
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

// checkThreadKBs refuses a turn on a thread that attaches a knowledge base
// the connection's token is not granted (any more): a grant narrowed since
// the thread started (the token file changed, the server restarted) would
// otherwise still reach the base through the thread's older settings.
func (c *conn) checkThreadKBs(ctx context.Context, threadID string) error {
	grant, limited := c.s.grantedKBs(c.who)
	if !limited {
		return nil
	}
	th, err := c.s.c.Sessions.ResumeThread(ctx, threadID)
	if err != nil {
		return err
	}
	for _, kb := range th.Settings.KBs {
		if !slices.Contains(grant, kb) {
			return invalidParams("this thread attaches the knowledge base %q, which this token is not granted (any more): start a new thread", clip(kb))
		}
	}
	return nil
}
