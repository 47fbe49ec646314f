package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/reinhq/rein/sandbox"
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
			unknown = append(unknown, unknownSetting(k))
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
	errs = append(errs, f.Sandbox.check()...)
	errs = append(errs, f.Stream.check()...)
	errs = append(errs, f.WebSearch.check()...)
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

// Names returns the names of the settings r gives, in the documented
// order.
func (r *Request) Names() []string { return r.set() }

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
	add(r.ParallelToolCalls != nil, "parallel_tool_calls")
	add(r.ReasoningSummary != nil, "reasoning_summary")
	add(r.Store != nil, "store")
	add(r.TokenParam != nil, "token_param")
	add(r.StreamUsage != nil, "stream_usage")
	add(len(r.Extra) > 0, "extra")
	add(len(r.Headers) > 0, "headers")
	add(r.IdleTimeout != nil, "idle_timeout")
	add(r.OutputMode != nil, "output_mode")
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
	if d := r.IdleTimeout; d != nil && *d <= 0 {
		errs = append(errs, fmt.Errorf("%s: idle_timeout %s: want a positive duration such as \"5m\" (leave it out for the default, 5m)", at, *d))
	}
	for _, e := range []struct {
		name  string
		v     *string
		valid []string
	}{
		{"reasoning_effort", r.ReasoningEffort, ReasoningEfforts},
		{"reasoning_summary", r.ReasoningSummary, ReasoningSummaries},
		{"token_param", r.TokenParam, TokenParams},
		{"output_mode", r.OutputMode, OutputModes},
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

// Check validates the values of the request settings given at at (a table,
// or the command line) and, when protocol is not empty, that the protocol
// takes each of them.
func (r *Request) Check(at, protocol string) error {
	return errors.Join(r.check(at, protocol)...)
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

// UnmarshalTOML reads the [sandbox] table, whose values may be written
// more than one way (a size as a number or a string with a unit, "none"
// for no limit). It records what is wrong instead of stopping at it, so
// that check reports every bad value, each with its key.
func (s *Sandbox) UnmarshalTOML(v any) error {
	*s = Sandbox{}
	t, ok := v.(map[string]any)
	if !ok {
		s.errs = append(s.errs, fmt.Errorf("sandbox: want a table ([sandbox] with %s), not %s", strings.Join(SandboxKeys, ", "), tomlType(v)))
		return nil
	}
	for _, k := range sortedKeys(t) {
		v := t[k]
		var err error
		switch k {
		case "memory":
			s.Memory, err = parseSize(v, sandbox.DefaultMemory)
		case "max_file_size":
			s.MaxFileSize, err = parseSize(v, sandbox.DefaultFileSize)
		case "cpu_time":
			s.CPUTime, err = parseCPUTime(v)
		case "max_processes":
			s.MaxProcesses, err = parseCount(v, sandbox.DefaultProcs)
		case "max_open_files":
			s.MaxOpenFiles, err = parseCount(v, sandbox.DefaultOpenFiles)
		case "deny_read":
			s.DenyRead, err = parsePatterns(k, v)
		case "deny_write":
			s.DenyWrite, err = parsePatterns(k, v)
		case "allow":
			s.Allow, err = parsePatterns(k, v)
		case "env":
			s.Env, err = parseEnvNames(v)
		default:
			s.errs = append(s.errs, fmt.Errorf("unknown setting sandbox.%s (the [sandbox] settings are %s)", k, strings.Join(SandboxKeys, ", ")))
		}
		var pe patternErrors
		switch {
		case errors.As(err, &pe):
			s.errs = append(s.errs, pe...)
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("sandbox: %s %s: %w", k, show(v), err))
		}
	}
	return nil
}

// check returns what UnmarshalTOML found wrong and, when the patterns
// passed, what package sandbox would refuse of the deny list, so that a
// file this package accepts always opens a workspace.
func (s *Sandbox) check() []error {
	if len(s.errs) > 0 {
		return s.errs
	}
	if _, err := sandbox.NewDenyList(s.Options().Deny); err != nil {
		return []error{fmt.Errorf("sandbox: %w", err)}
	}
	return nil
}

// sizeUnits are the units of sizes, lower case; all are powers of 1024.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

const sizeHint = `want a size such as "512MiB" or "2GiB" (K, M, G and T are powers of 1024, with or without B or iB), a whole number of bytes, or "none" (or -1) for no limit`

// parseSize reads a size in bytes: a whole number, a string of a number
// and a unit, or "none" or -1 (NoLimit). Zero is refused: package sandbox
// would take it for the default (def), where whoever wrote it more likely
// meant nothing at all.
func parseSize(v any, def int64) (int64, error) {
	switch v := v.(type) {
	case int64:
		return limitInt(v, sandbox.FormatBytes(def))
	case string:
		s := strings.TrimSpace(v)
		if isNone(s) {
			return NoLimit, nil
		}
		i := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
		if i < 0 {
			i = len(s)
		}
		num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
		mult, ok := sizeUnits[unit]
		n, numOK := new(big.Rat).SetString(num)
		if num == "" || !numOK {
			if num == "" && strings.HasPrefix(s, "-") {
				return 0, errors.New(`a size may not be negative; ` + sizeHint)
			}
			return 0, errors.New(sizeHint)
		}
		if !ok {
			return 0, fmt.Errorf("unknown unit %q; %s", s[i:], sizeHint)
		}
		n.Mul(n, new(big.Rat).SetInt64(mult))
		b := new(big.Int).Quo(n.Num(), n.Denom())
		if !b.IsInt64() {
			return 0, errors.New("too large; " + sizeHint)
		}
		return limitInt(b.Int64(), sandbox.FormatBytes(def))
	}
	return 0, errors.New(sizeHint)
}

// parseCount reads a number of processes or files: a positive whole
// number, or "none" or -1 (NoLimit).
func parseCount(v any, def int) (int, error) {
	switch v := v.(type) {
	case int64:
		if v > math.MaxInt32 {
			return 0, fmt.Errorf("too large; want at most %d, or \"none\" (or -1) for no limit", math.MaxInt32)
		}
		n, err := limitInt(v, fmt.Sprint(def))
		return int(n), err
	case string:
		if isNone(v) {
			return NoLimit, nil
		}
	}
	return 0, fmt.Errorf(`want a whole number such as %d, or "none" (or -1) for no limit`, def)
}

// limitInt checks a limit given as a whole number: positive, or -1 for
// none. def is the default, for the error.
func limitInt(v int64, def string) (int64, error) {
	switch {
	case v == 0:
		return 0, fmt.Errorf(`0 allows nothing; leave the key out for the default (%s), or use "none" (or -1) for no limit`, def)
	case v < NoLimit:
		return 0, errors.New(`a limit may not be negative; use "none" (or -1) for no limit`)
	}
	return v, nil
}

const durationHint = `want a duration such as "90s" or "10m", "0s" for the call's timeout (the default), or "none" (or -1) for no limit`

// parseCPUTime reads the CPU time: a Go duration, 0 (the call's timeout),
// or "none" or -1 (NoLimit).
func parseCPUTime(v any) (time.Duration, error) {
	switch v := v.(type) {
	case int64:
		switch {
		case v == 0 || v == NoLimit:
			return time.Duration(v), nil
		case v > 0:
			return 0, fmt.Errorf("a number without a unit; write \"%ds\" for seconds", v)
		}
		return 0, errors.New(`a duration may not be negative; use "none" (or -1) for no limit`)
	case string:
		if isNone(v) {
			return NoLimit, nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			return 0, errors.New(durationHint)
		case d < 0:
			return 0, errors.New(`a duration may not be negative; use "none" (or -1) for no limit`)
		}
		return d, nil
	}
	return 0, errors.New(durationHint)
}

func isNone(s string) bool {
	s = strings.TrimSpace(s)
	return strings.EqualFold(s, "none") || s == "-1"
}

const patternHint = `want a glob relative to the workspace root, such as ".env*", "*.key" or "config/secrets/**"`

// patternErrors are the errors of a list's patterns, each naming its key
// and index.
type patternErrors []error

func (e patternErrors) Error() string { return errors.Join(e...).Error() }

// parsePatterns reads the list of deny-list patterns of key, each a
// doublestar glob relative to the workspace root. The error names each
// bad pattern (patternErrors), or says the value is not a list.
func parsePatterns(key string, v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New(`want a list of patterns, such as ["secrets/**", "*.key"]`)
	}
	out := make([]string, 0, len(list))
	var errs patternErrors
	for i, e := range list {
		p, ok := e.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("sandbox: %s[%d] %s: %s, not a pattern; %s", key, i, show(e), tomlType(e), patternHint))
			continue
		}
		if err := checkPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: %s[%d] %q: %w", key, i, p, err))
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// parseEnvNames reads sandbox.env, the list of variable names commands
// see beside the defaults; each bad entry is named with its index.
func parseEnvNames(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New(`want a list of variable names, such as ["GOFLAGS", "NODE_OPTIONS"]`)
	}
	out := make([]string, 0, len(list))
	var errs patternErrors
	for i, e := range list {
		n, ok := e.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("sandbox: env[%d] %s: %s, not a variable name; want a name such as \"GOFLAGS\"", i, show(e), tomlType(e)))
			continue
		}
		if err := sandbox.CheckEnvName(n); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: env[%d]: %w", i, err))
			continue
		}
		out = append(out, n)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// checkPattern checks a pattern as package sandbox reads it: leading and
// trailing slashes are dropped, so "/build" is build at the root.
func checkPattern(p string) error {
	if _, err := sandbox.ParsePattern(p); err != nil {
		return fmt.Errorf("%v; %s", err, patternHint)
	}
	return nil
}

// show writes a TOML value as it was given, for errors.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []any:
		return "[…]"
	case map[string]any:
		return "{…}"
	}
	return fmt.Sprint(v)
}

// tomlType names the TOML type of a decoded value.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}
