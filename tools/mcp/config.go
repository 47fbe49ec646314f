// Package mcp mounts the tools of MCP servers (Model Context Protocol)
// through the official Go SDK, as deferred tools (DESIGN §7.3): the system
// prompt lists one line per tool (Manager.Manifest), and the model loads
// the schemas it needs with load_tools, which adds them to the turn's live
// tool.Set so the engine offers them from the next round.
//
// Servers run over stdio (a command rein starts) or streamable HTTP. Each
// has a start timeout and a call timeout. A server that fails to start is
// left out with a warning. One that dies (a stdio server's process exits,
// an HTTP server forgets the session) turns the calls under way into error
// results and a warning, never a failed turn or a hang, and is restarted
// by the next call to one of its tools: at most one attempt every 2 s and
// 5 in a row without an answered call, after which its tools fail with a
// result saying it is down and how to look into it. A call that may have
// run is never sent again; one the server cannot have received is, once,
// on the restarted server.
//
// Trust: [mcp.servers.NAME] trusted = true says the user vouches for the
// server, its tools and their annotations. A trusted server's tools run
// without approval; an untrusted server's tools ask under the default
// policy unless it marks them read-only (readOnlyHint). Where the user
// asked for a guarantee — the read-only sandbox mode (Manager.Offer), the
// approval policy untrusted — a tool counts as read-only only when a
// trusted server marks it so.
package mcp

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Defaults of ServerConfig.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultCallTimeout  = 60 * time.Second
)

// ServerConfig describes one MCP server, as the config file gives it:
//
//	[mcp.servers.github]
//	command = "github-mcp-server"
//	args    = ["stdio"]
//	env     = { GITHUB_PERSONAL_ACCESS_TOKEN = "$GITHUB_TOKEN" }
//
//	[mcp.servers.docs]
//	url          = "http://127.0.0.1:8931/mcp"
//	headers      = { Authorization = "Bearer $DOCS_TOKEN" }
//	call_timeout = "2m"
type ServerConfig struct {
	// Name prefixes the server's tools ("NAME__tool"); letters, digits, _
	// and - only.
	Name string `json:"name" toml:"name"`

	// Command and Args start a stdio server.
	Command string   `json:"command,omitempty" toml:"command"`
	Args    []string `json:"args,omitempty" toml:"args"`
	// Env is added to the server's environment, which otherwise is rein's
	// without secrets (see sandbox.ScrubEnv): a server gets a key only
	// when its config names it. $VAR and ${VAR} in values are expanded
	// from rein's environment.
	Env map[string]string `json:"env,omitempty" toml:"env"`
	// Dir is the server's working directory; empty means rein's.
	Dir string `json:"dir,omitempty" toml:"dir"`

	// URL is the endpoint of a streamable HTTP server.
	URL string `json:"url,omitempty" toml:"url"`
	// Headers are sent with every HTTP request, expanded like Env.
	Headers map[string]string `json:"headers,omitempty" toml:"headers"`

	// StartTimeout bounds starting, initializing and listing tools
	// (DefaultStartTimeout).
	StartTimeout time.Duration `json:"start_timeout,omitempty" toml:"start_timeout"`
	// CallTimeout bounds one tool call (DefaultCallTimeout).
	CallTimeout time.Duration `json:"call_timeout,omitempty" toml:"call_timeout"`
	// Trusted tools run without asking the user; otherwise every tool not
	// marked read-only by the server needs approval. Only a trusted
	// server's read-only marks count in the read-only sandbox mode (the
	// other tools are withheld) and under the approval policy untrusted.
	Trusted bool `json:"trusted,omitempty" toml:"trusted"`
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ErrConfig is matched by errors.Is for every invalid server config.
var ErrConfig = errors.New("invalid MCP server config")

func (c ServerConfig) check() error {
	switch {
	case !validName.MatchString(c.Name):
		return fmt.Errorf("mcp: %w: name %q: use 1 to 32 letters, digits, _ or -", ErrConfig, c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("mcp: %w: server %q: give a command (stdio) or a url (streamable HTTP)", ErrConfig, c.Name)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("mcp: %w: server %q: give a command or a url, not both", ErrConfig, c.Name)
	case c.StartTimeout < 0 || c.CallTimeout < 0:
		return fmt.Errorf("mcp: %w: server %q: timeouts cannot be negative", ErrConfig, c.Name)
	}
	return nil
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}
