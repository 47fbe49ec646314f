// Package provider turns a model spec such as "openai:gpt-5-mini",
// "local:qwen3" or "scripted:demo.yaml" into an llm.Model (DESIGN §6, §13):
// which wire protocol, which base URL and which key, from flags, the
// environment and the configuration file, and what is known about the model
// (its capabilities and price).
package provider

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/config"
)

// Spec names a model: provider and model name.
type Spec struct {
	Provider string
	Model    string
}

func (s Spec) String() string { return s.Provider + ":" + s.Model }

// Name is the model's name as a request and a span carry it: Model, but
// none for a scripted spec, whose Model is a script's path.
func (s Spec) Name() string {
	if s.Provider == "scripted" {
		return ""
	}
	return s.Model
}

// Providers are the built-in provider prefixes. Configured providers add
// their own names.
var Providers = []string{"openai", "openai-chat", "anthropic", "deepseek", "scripted"}

// builtin describes a built-in provider.
type builtin struct {
	protocol string
	keyEnv   string
	baseEnv  string
	// base is the base URL when neither the flag nor baseEnv gives one;
	// empty leaves the SDK's default.
	base string
	// model is the model chosen when only the key is set.
	model string
	// family is the vendor whose models the built-in table lists for it.
	family string
}

var builtins = map[string]builtin{
	"openai":      {protocol: "openai", keyEnv: "OPENAI_API_KEY", baseEnv: "OPENAI_BASE_URL", model: "gpt-5-mini", family: "openai"},
	"openai-chat": {protocol: "openai-chat", keyEnv: "OPENAI_API_KEY", baseEnv: "OPENAI_BASE_URL", model: "gpt-5-mini", family: "openai"},
	"anthropic":   {protocol: "anthropic", keyEnv: "ANTHROPIC_API_KEY", baseEnv: "ANTHROPIC_BASE_URL", model: "claude-sonnet-4-5", family: "anthropic"},
	"deepseek":    {protocol: "openai-chat", keyEnv: "DEEPSEEK_API_KEY", baseEnv: "DEEPSEEK_BASE_URL", base: "https://api.deepseek.com", model: "deepseek-chat", family: "deepseek"},
	"scripted":    {protocol: "scripted"},
}

// ParseSpec parses "provider:model", or a bare model name whose provider
// the name tells (BareProvider: gpt-5 is openai:gpt-5). It checks the form
// only: whether the provider exists depends on the configuration, which
// Resolve reads.
func ParseSpec(s string) (Spec, error) {
	p, m, ok := strings.Cut(s, ":")
	if !ok {
		if prov, known := BareProvider(s); known {
			return Spec{Provider: prov, Model: strings.TrimSpace(s)}, nil
		}
	}
	if !ok || p == "" || m == "" {
		return Spec{}, fmt.Errorf("model %q: want PROVIDER:MODEL, e.g. openai:gpt-5-mini or scripted:script.yaml, or a model name that tells its provider (gpt-…, o3…, claude-…, deepseek-…) (built-in providers: %s; more in the config file)", s, strings.Join(Providers, ", "))
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return Spec{}, fmt.Errorf("model %q: provider %q is not a provider name (built-in: %s)", s, p, strings.Join(Providers, ", "))
		}
	}
	return Spec{Provider: p, Model: m}, nil
}

// Config is what Resolve reads besides the spec.
type Config struct {
	// BaseURL overrides the provider's base URL (--base-url).
	BaseURL string
	// APIKey is the key to send, given explicitly (a library caller's);
	// empty reads the provider's key variable through Getenv.
	APIKey string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// NoStream asks for whole responses instead of streams.
	NoStream bool
	// File is the configuration; nil reads it from config.Path(Getenv).
	File *config.File
	// Request holds request settings from the command line (--reasoning-
	// effort, --parallel-tool-calls): over every table of the file.
	Request config.Request
	// Warn is told what the user should know about the model while it
	// runs, such as a switch to text tool mode after the server refused
	// tool definitions; nil logs with slog.Default.
	Warn func(msg string)
}

func (c Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// file returns the configuration, reading it when not given, and checks
// what package config cannot check alone (checkFile).
func (c Config) file() (*config.File, error) {
	f := c.File
	if f == nil {
		var err error
		if f, err = config.LoadDefault(c.getenv); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	if err := checkFile(f); err != nil {
		return nil, err
	}
	return f, nil
}

// checkFile checks what needs the built-in providers: it refuses configured
// providers that would shadow built-in ones (a spec must mean the same
// thing on every machine that has the key), and request settings in a
// built-in provider's [models."NAME:…"] tables that its protocol does not
// take.
func checkFile(f *config.File) error {
	var errs []error
	for _, name := range sortedKeys(f.Providers) {
		if _, ok := builtins[name]; ok {
			errs = append(errs, fmt.Errorf("providers.%s: %q is a built-in provider; give yours another name (use [models.\"%s:MODEL\"] or [models.\"%s:*\"] to change what is known about its models and what is sent to them)", name, name, name, name))
		}
	}
	for _, key := range sortedKeys(f.Models) {
		name, _, _ := strings.Cut(key, ":")
		if b, ok := builtins[name]; ok {
			m := f.Models[key]
			if err := m.Request.CheckProtocol(fmt.Sprintf("models.%q", key), b.protocol); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		if f.Path != "" {
			return fmt.Errorf("config: %s: %w", f.Path, err)
		}
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ErrNoProvider says no model was given and no provider key is set.
var ErrNoProvider = errors.New("no model configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or DEEPSEEK_API_KEY " +
	"(any non-empty value for a local server, with --base-url), pass --model PROVIDER:MODEL, " +
	"or name a model in the config file (model = \"PROVIDER:MODEL\"; see rein models); " +
	"to see rein work offline, run: rein demo")

// Default returns the model to use when none is given: the config file's
// model, else the first built-in provider whose key is set, else the first
// configured provider (by name) whose key variable is set and that lists a
// model. With none, it returns ErrNoProvider.
func Default(c Config) (Spec, error) {
	f, err := c.file()
	if err != nil {
		return Spec{}, err
	}
	if f.Model != "" {
		return ParseSpec(f.Model)
	}
	for _, name := range []string{"openai", "anthropic", "deepseek"} {
		if b := builtins[name]; c.getenv(b.keyEnv) != "" {
			return Spec{Provider: name, Model: b.model}, nil
		}
	}
	for _, name := range sortedKeys(f.Providers) {
		p := f.Providers[name]
		if p.KeyEnv == "" || c.getenv(p.KeyEnv) == "" {
			continue
		}
		if models := sortedKeys(p.Models); len(models) > 0 {
			return Spec{Provider: name, Model: models[0]}, nil
		}
	}
	return Spec{}, ErrNoProvider
}
