package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Path returns where the configuration file is looked for:
// $XDG_CONFIG_HOME/rein/config.toml when XDG_CONFIG_HOME is an absolute
// path (the XDG spec says relative ones are ignored), otherwise
// $HOME/.config/rein/config.toml. getenv reads the environment; nil means
// os.Getenv. It returns "" when neither variable helps.
func Path(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "rein", "config.toml")
	}
	home := getenv("HOME")
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "rein", "config.toml")
}

// LoadDefault reads the file at Path(getenv). A missing file is not an
// error: the result is an empty File.
func LoadDefault(getenv func(string) string) (*File, error) {
	p := Path(getenv)
	if p == "" {
		return &File{}, nil
	}
	f, err := Load(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{}, nil
	}
	return f, err
}

// Load reads and checks the file at path. Unknown keys are errors, so a
// misspelt setting never silently does nothing.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse reads and checks configuration text.
func Parse(text string) (*File, error) {
	var f File
	md, err := toml.Decode(text, &f)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		if !inExtra(k) {
			unknown = append(unknown, k.String())
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown setting %s", strings.Join(unknown, ", "))
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// check validates values the decoder cannot: names, enumerations, ranges.
func (f *File) check() error {
	var errs []error
	if f.Model != "" && !strings.Contains(f.Model, ":") {
		errs = append(errs, fmt.Errorf("model %q: want PROVIDER:MODEL", f.Model))
	}
	for _, name := range sortedKeys(f.Providers) {
		p := f.Providers[name]
		at := "providers." + name
		if !validName(name) {
			errs = append(errs, fmt.Errorf("%s: a provider name is lower-case letters, digits, '-', '_' or '.'", at))
		}
		switch {
		case p.Protocol == "":
			errs = append(errs, fmt.Errorf("%s: protocol is missing (one of %s)", at, strings.Join(Protocols, ", ")))
		case !slices.Contains(Protocols, p.Protocol):
			errs = append(errs, fmt.Errorf("%s: protocol %q: use one of %s", at, p.Protocol, strings.Join(Protocols, ", ")))
		case p.Protocol == "openai-chat" && p.BaseURL == "":
			errs = append(errs, fmt.Errorf("%s: base_url is missing (such as http://127.0.0.1:8080/v1)", at))
		}
		switch p.ToolMode {
		case "", ToolModeNative, ToolModeText:
		default:
			errs = append(errs, fmt.Errorf("%s: tool_mode %q: use native or text", at, p.ToolMode))
		}
		if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			errs = append(errs, fmt.Errorf("%s: base_url %q: want an http:// or https:// URL", at, p.BaseURL))
		}
		// The protocol is checked only when it is known: a wrong one has
		// its own error above.
		protocol := ""
		if slices.Contains(Protocols, p.Protocol) {
			protocol = p.Protocol
		}
		errs = append(errs, p.Request.check(at, protocol)...)
		errs = append(errs, p.Capabilities.check(at+".capabilities")...)
		for _, m := range sortedKeys(p.Models) {
			errs = append(errs, p.Models[m].check(fmt.Sprintf("%s.models.%q", at, m), protocol)...)
		}
	}
	for _, m := range sortedKeys(f.Models) {
		at := fmt.Sprintf("models.%q", m)
		prov, name, ok := strings.Cut(m, ":")
		if !ok || prov == "" || name == "" {
			errs = append(errs, fmt.Errorf("%s: want a PROVIDER:MODEL key (or PROVIDER:* for all its models)", at))
		}
		// A configured provider's protocol is known here; a built-in
		// provider's is checked by package provider (CheckProtocol).
		protocol := ""
		if p, ok := f.Providers[prov]; ok && slices.Contains(Protocols, p.Protocol) {
			protocol = p.Protocol
		}
		errs = append(errs, f.Models[m].check(at, protocol)...)
	}
	return errors.Join(errs...)
}

// inExtra reports whether an undecoded key lies inside an extra table,
// whose nested tables the decoder leaves unmarked although they were read
// into the map: providers.P.extra…, providers.P.models.M.extra…,
// models.K.extra….
func inExtra(k toml.Key) bool {
	switch {
	case len(k) > 3 && k[0] == "providers" && k[2] == "extra":
		return true
	case len(k) > 5 && k[0] == "providers" && k[2] == "models" && k[4] == "extra":
		return true
	case len(k) > 3 && k[0] == "models" && k[2] == "extra":
		return true
	}
	return false
}

func (m Model) check(at, protocol string) []error {
	return append(m.Capabilities.check(at), m.Request.check(at, protocol)...)
}

// set returns the names of the settings r gives, in RequestProtocols'
// documented order.
func (r *Request) set() []string {
	var names []string
	add := func(ok bool, name string) {
		if ok {
			names = append(names, name)
		}
	}
	add(r.ThinkingBudget != nil, "thinking_budget")
	add(r.PromptCache != nil, "prompt_cache")
	add(r.MaxTokens != nil, "max_tokens")
	add(r.ReasoningEffort != nil, "reasoning_effort")
	add(r.ReasoningSummary != nil, "reasoning_summary")
	add(r.Store != nil, "store")
	add(r.TokenParam != nil, "token_param")
	add(r.StreamUsage != nil, "stream_usage")
	add(len(r.Extra) > 0, "extra")
	add(len(r.Headers) > 0, "headers")
	return names
}

// check validates the values of the request settings at table at and,
// when protocol is not empty, that the protocol takes each of them.
func (r *Request) check(at, protocol string) []error {
	var errs []error
	if b := r.ThinkingBudget; b != nil && *b != 0 && *b < MinThinkingBudget {
		errs = append(errs, fmt.Errorf("%s: thinking_budget %d: use 0 (thinking off) or at least %d tokens", at, *b, MinThinkingBudget))
	}
	if n := r.MaxTokens; n != nil && *n <= 0 {
		errs = append(errs, fmt.Errorf("%s: max_tokens %d: must be positive", at, *n))
	}
	for _, e := range []struct {
		name  string
		v     *string
		valid []string
	}{
		{"reasoning_effort", r.ReasoningEffort, ReasoningEfforts},
		{"reasoning_summary", r.ReasoningSummary, ReasoningSummaries},
		{"token_param", r.TokenParam, TokenParams},
	} {
		if e.v != nil && !slices.Contains(e.valid, *e.v) {
			errs = append(errs, fmt.Errorf("%s: %s %q: use one of %s", at, e.name, *e.v, strings.Join(e.valid, ", ")))
		}
	}
	for _, k := range sortedKeys(r.Extra) {
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("%s: extra: a field name is empty", at))
		case slices.Contains(ReservedExtra, k):
			errs = append(errs, fmt.Errorf("%s: extra.%s: rein writes %s itself; extra may not replace %s", at, k, k, strings.Join(ReservedExtra, ", ")))
		default:
			if _, err := json.Marshal(r.Extra[k]); err != nil {
				errs = append(errs, fmt.Errorf("%s: extra.%s: not a JSON value (%v)", at, k, err))
			}
		}
	}
	for _, k := range sortedKeys(r.Headers) {
		if !validHeaderName(k) {
			errs = append(errs, fmt.Errorf("%s: headers %q: not a header name (letters, digits and !#$%%&'*+-.^_`|~)", at, k))
		}
		if strings.ContainsAny(r.Headers[k], "\r\n\x00") {
			errs = append(errs, fmt.Errorf("%s: headers %q: a header value may not hold a line break or NUL", at, k))
		}
	}
	if protocol != "" {
		if err := r.CheckProtocol(at, protocol); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// CheckProtocol returns an error naming each request setting of table at
// that protocol does not take, and which protocols do; nil when all fit.
// Package provider calls it for the tables of built-in providers, whose
// protocols this package does not know.
func (r *Request) CheckProtocol(at, protocol string) error {
	var errs []error
	for _, name := range r.set() {
		takes := RequestProtocols[name]
		if slices.Contains(takes, protocol) {
			continue
		}
		what := "the " + takes[0] + " protocol"
		if takes[0] == "openai" && len(takes) == 1 {
			what += " (the Responses API)"
		}
		if len(takes) > 1 {
			what = "the " + strings.Join(takes[:len(takes)-1], ", ") + " and " + takes[len(takes)-1] + " protocols"
		}
		hint := ""
		switch {
		case name == "thinking_budget" && (protocol == "openai" || protocol == "openai-chat"):
			hint = " (use reasoning_effort)"
		case name == "reasoning_effort" && protocol == "anthropic":
			hint = " (use thinking_budget)"
		}
		errs = append(errs, fmt.Errorf("%s: %s is a setting of %s only, and this provider speaks %s%s", at, name, what, protocol, hint))
	}
	return errors.Join(errs...)
}

// validHeaderName reports whether s is an HTTP header name (an RFC 9110
// token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

func (c Capabilities) check(at string) []error {
	var errs []error
	if c.ContextWindow != nil && *c.ContextWindow <= 0 {
		errs = append(errs, fmt.Errorf("%s: context_window must be positive", at))
	}
	if c.MaxOutput != nil && *c.MaxOutput <= 0 {
		errs = append(errs, fmt.Errorf("%s: max_output must be positive", at))
	}
	if c.ReasoningReplay != nil && !slices.Contains(ReplayRules, *c.ReasoningReplay) {
		errs = append(errs, fmt.Errorf("%s: reasoning_replay %q: use one of %s", at, *c.ReasoningReplay, strings.Join(ReplayRules, ", ")))
	}
	if p := c.Price; p != nil && (p.InputPerM < 0 || p.OutputPerM < 0 || p.CachedPerM < 0) {
		errs = append(errs, fmt.Errorf("%s: prices must not be negative", at))
	}
	for _, e := range c.Estimated {
		if !slices.Contains(Fields, e) {
			errs = append(errs, fmt.Errorf("%s: estimated %q: use field names (%s)", at, e, strings.Join(Fields, ", ")))
		}
	}
	return errs
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
