package config

import (
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
	if un := md.Undecoded(); len(un) > 0 {
		keys := make([]string, len(un))
		for i, k := range un {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("unknown setting %s", strings.Join(keys, ", "))
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
		errs = append(errs, p.Capabilities.check(at+".capabilities")...)
		for _, m := range sortedKeys(p.Models) {
			errs = append(errs, p.Models[m].check(fmt.Sprintf("%s.models.%q", at, m))...)
		}
	}
	for _, m := range sortedKeys(f.Models) {
		at := fmt.Sprintf("models.%q", m)
		if p, name, ok := strings.Cut(m, ":"); !ok || p == "" || name == "" {
			errs = append(errs, fmt.Errorf("%s: want a PROVIDER:MODEL key", at))
		}
		errs = append(errs, f.Models[m].check(at)...)
	}
	return errors.Join(errs...)
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
