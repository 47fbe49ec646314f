package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/tool"
)

// Separator joins a server's name and its tool's name: "github__search".
const Separator = "__"

// maxName is the longest tool name providers accept (OpenAI: 64).
const maxName = 64

// maxResult caps the text of one result; MCP servers may return whole
// documents.
const maxResult = 50_000

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// QualifiedName returns the name a server's tool has in rein: the server's
// name, "__", and the tool's name with characters providers refuse
// replaced by "_", cut to 64 characters.
func QualifiedName(server, tool string) string {
	n := server + Separator + unsafeName.ReplaceAllString(tool, "_")
	if len(n) > maxName {
		n = n[:maxName]
	}
	return n
}

// remoteTool is one tool of an MCP server, as a rein tool.
type remoteTool struct {
	srv  *server
	name string // the server's name for it
	spec tool.Spec
	key  string
	// readOnlyHint is the server's word that the tool changes nothing
	// (its readOnlyHint annotation).
	readOnlyHint bool
}

func newRemoteTool(s *server, t *sdk.Tool) (*remoteTool, error) {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("its input schema: %w", err)
		}
		schema = b
	}
	hint := t.Annotations != nil && t.Annotations.ReadOnlyHint
	// The MCP specification has clients treat tool annotations as
	// untrusted unless the server is: a read-only hint makes the tool
	// read-only (the read-only sandbox mode offers it, the approval policy
	// untrusted runs it without asking, its calls run beside the server's
	// other reads) only when the server is trusted. The hint still spares
	// an untrusted server's tool the approval of the default policy
	// (on-request), which asks for the tools that say they write.
	access := tool.Mutating
	if hint && s.cfg.Trusted {
		access = tool.ReadOnly
	}
	return &remoteTool{
		srv:          s,
		name:         t.Name,
		key:          "mcp:" + s.cfg.Name,
		readOnlyHint: hint,
		spec: tool.Spec{
			Name:          QualifiedName(s.cfg.Name, t.Name),
			Description:   strings.TrimSpace(t.Description),
			Schema:        schema,
			Access:        access,
			Timeout:       s.cfg.CallTimeout + terminateGrace,
			NeedsApproval: !hint && !s.cfg.Trusted,
		},
	}, nil
}

// readOnlyWithheld returns why the read-only sandbox mode withholds the
// tool, or "" when it offers it: only a tool its server marks read-only
// (readOnlyHint) and whose server is trusted is offered.
func (t *remoteTool) readOnlyWithheld() string {
	const mode = "the sandbox mode is read-only"
	name := t.srv.cfg.Name
	switch {
	case t.srv.cfg.Trusted && t.readOnlyHint:
		return ""
	case t.srv.cfg.Trusted:
		return fmt.Sprintf("%s, and MCP server %q does not mark the tool read-only (readOnlyHint)", mode, name)
	case t.readOnlyHint:
		return fmt.Sprintf("%s, and MCP server %q is not trusted, so its read-only hint does not count (trusted = true in [mcp.servers.%s] makes it count)", mode, name, name)
	default:
		return fmt.Sprintf("%s, and MCP server %q is not trusted and does not mark the tool read-only", mode, name)
	}
}

func (t *remoteTool) Spec() tool.Spec { return t.spec }

// Keys implements tool.Keyer: a server's tools share its state, so its
// writing calls run in order and its reads wait for them; calls to
// different servers overlap.
func (t *remoteTool) Keys(json.RawMessage) tool.Keys {
	if t.spec.Access == tool.ReadOnly {
		return tool.Keys{Reads: []string{t.key}}
	}
	return tool.Keys{Writes: []string{t.key}}
}

func (t *remoteTool) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	return t.srv.call(ctx, t.name, t.spec.Name, call.Args)
}

// toOutput turns a tool result into text for the model: text parts as
// they are, other parts described in a line, structured content as JSON
// when there is nothing else.
func toOutput(res *sdk.CallToolResult) tool.Output {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	out := tool.Output{Failed: res.IsError}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Meta = b
			if len(parts) == 0 {
				parts = append(parts, string(b))
			}
		}
	}
	out.Text = strings.Join(parts, "\n")
	if out.Text == "" {
		out.Text = "(the tool returned no content)"
	}
	if len(out.Text) > maxResult {
		cut := out.Text[:maxResult]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		out.Text = cut + fmt.Sprintf("\n[… %d more bytes cut …]", len(out.Text)-len(cut))
	}
	return out
}

func failed(format string, args ...any) tool.Output {
	return tool.Output{Text: fmt.Sprintf(format, args...), Failed: true}
}
