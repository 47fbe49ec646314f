package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ErrServerExists: an MCP server of that name is configured already.
var ErrServerExists = errors.New("config: an MCP server of that name is configured already")

// validServerName is a name `rein mcp add` writes as a bare TOML key.
var validServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// AddMCPServer appends an [mcp.servers.NAME] table for s to the config
// file at path, creating the file when there is none. The file's text is
// kept as it is (comments too): the table is added at the end, and the
// result must parse and check, or the file is left unchanged and the error
// says why. A server of the same name is ErrServerExists.
func AddMCPServer(path, name string, s MCPServer) error {
	if !validServerName.MatchString(name) {
		return fmt.Errorf("MCP server name %q: use letters, digits, '-' and '_'", name)
	}
	if (s.Command == "") == (s.URL == "") {
		return fmt.Errorf("MCP server %s: give a command or a URL, not both", name)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(old) > 0 {
		f, err := Parse(string(old))
		if err != nil {
			return fmt.Errorf("%s: %w (fix it before adding a server)", path, err)
		}
		if _, ok := f.MCP.Servers[name]; ok {
			return fmt.Errorf("%s: %w: %s (rein mcp rm %s first)", path, ErrServerExists, name, name)
		}
	}
	body := serverTable(s)
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(old) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[mcp.servers.%s]\n", name)
	b.WriteString(body)
	if _, err := Parse(b.String()); err != nil {
		return fmt.Errorf("%s: adding %s would make the file unreadable (%w); add it by hand", path, name, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// serverTable is the body of s's table, the unset keys left out so the
// file says only what was given; maps are inline tables, so the body
// stays under its header.
func serverTable(s MCPServer) string {
	var b strings.Builder
	put := func(k, v string, set bool) {
		if set {
			b.WriteString(k + " = " + v + "\n")
		}
	}
	put("command", tomlString(s.Command), s.Command != "")
	put("args", tomlArray(s.Args), len(s.Args) > 0)
	put("env", tomlInline(s.Env), len(s.Env) > 0)
	put("dir", tomlString(s.Dir), s.Dir != "")
	put("url", tomlString(s.URL), s.URL != "")
	put("headers", tomlInline(s.Headers), len(s.Headers) > 0)
	put("start_timeout", tomlString(s.StartTimeout.String()), s.StartTimeout > 0)
	put("call_timeout", tomlString(s.CallTimeout.String()), s.CallTimeout > 0)
	put("trusted", "true", s.Trusted)
	return b.String()
}

// tomlString is s as a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func tomlArray(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func tomlInline(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(m[k])
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// RemoveMCPServer removes the [mcp.servers.NAME] table (and its sub-tables)
// from the config file at path, keeping the rest of its text. A server
// configured another way (an inline table) is refused with what to do.
func RemoveMCPServer(path, name string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := Parse(string(old))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := f.MCP.Servers[name]; !ok {
		return fmt.Errorf("%s: no MCP server %q (rein mcp list shows them)", path, name)
	}
	lines := strings.SplitAfter(string(old), "\n")
	var out strings.Builder
	skipping, found := false, false
	for _, l := range lines {
		if h, ok := tableHeader(l); ok {
			skipping = isServerTable(h, name)
			found = found || skipping
		}
		if !skipping {
			out.WriteString(l)
		}
	}
	if !found {
		return fmt.Errorf("%s: MCP server %q is not written as an [mcp.servers.%s] table; remove it by hand", path, name, name)
	}
	text := strings.TrimRight(out.String(), "\n") + "\n"
	nf, err := Parse(text)
	if err != nil {
		return fmt.Errorf("%s: removing %s would make the file unreadable (%w); remove it by hand", path, name, err)
	}
	if _, ok := nf.MCP.Servers[name]; ok {
		return fmt.Errorf("%s: MCP server %q is also given another way; remove it by hand", path, name)
	}
	return writeFileAtomic(path, []byte(text))
}

// tableHeader returns the dotted key of a [table] header line, quotes
// taken off its parts.
func tableHeader(line string) (string, bool) {
	l := strings.TrimSpace(line)
	if !strings.HasPrefix(l, "[") || strings.HasPrefix(l, "[[") {
		return "", false
	}
	end := strings.Index(l, "]")
	if end < 0 {
		return "", false
	}
	var parts []string
	for p := range strings.SplitSeq(l[1:end], ".") {
		parts = append(parts, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return strings.Join(parts, "."), true
}

// isServerTable says the header h is the server's table or one under it.
func isServerTable(h, name string) bool {
	t := "mcp.servers." + name
	return h == t || strings.HasPrefix(h, t+".")
}

// writeFileAtomic replaces path with data through a file beside it, so a
// crash leaves the old file or the new, never half of one.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// MCPJSON reads the mcpServers of an .mcp.json file (the format Claude
// Code and other clients write): stdio servers (command, args, env) and
// HTTP servers (type "http" or "sse", url, headers), by name, with the
// names it cannot take and why.
func MCPJSON(data []byte) (servers map[string]MCPServer, skipped map[string]string, err error) {
	var doc struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf(".mcp.json: %w", err)
	}
	servers, skipped = map[string]MCPServer{}, map[string]string{}
	names := make([]string, 0, len(doc.MCPServers))
	for n := range doc.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := doc.MCPServers[n]
		switch {
		case !validServerName.MatchString(n):
			skipped[n] = "the name is not letters, digits, '-' and '_'"
		case s.Command != "" && s.URL == "":
			servers[n] = MCPServer{Command: s.Command, Args: s.Args, Env: s.Env}
		case s.URL != "" && s.Command == "":
			if s.Type == "sse" {
				skipped[n] = "an SSE server; rein speaks streamable HTTP (add it with rein mcp add --url if it does too)"
				continue
			}
			servers[n] = MCPServer{URL: s.URL, Headers: s.Headers}
		default:
			skipped[n] = "neither a command nor a URL alone"
		}
	}
	return servers, skipped, nil
}
