package provider

import (
	"reflect"

	"github.com/reinhq/rein/config"
)

// Info describes a provider for `rein models`.
type Info struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	// BaseURL is where requests go; empty means the SDK's default.
	BaseURL string `json:"base_url,omitempty"`
	KeyEnv  string `json:"key_env,omitempty"`
	// KeySet reports whether KeyEnv is set (always true without a key).
	KeySet   bool   `json:"key_set"`
	ToolMode string `json:"tool_mode"`
	// Source is "built-in" or "config".
	Source string      `json:"source"`
	Models []ModelInfo `json:"models"`
}

// ModelInfo is a model a provider lists.
type ModelInfo struct {
	Name string       `json:"name"`
	Caps Capabilities `json:"capabilities"`
	// Request is what the config file sets for every request to the
	// model; nil when it sets nothing.
	Request *config.Request `json:"request,omitempty"`
}

// modelInfo describes model of the provider name speaking protocol, with
// the config file's tables applied.
func modelInfo(f *config.File, name, protocol, toolMode, model string) ModelInfo {
	ls := layersFor(f, name, model)
	// A model without native tools runs in text mode even when the
	// provider's is native; the listing says so per model.
	caps, _ := withToolMode(capabilitiesFor(protocol, model, capLayers(ls)...), toolMode)
	in := ModelInfo{Name: model, Caps: caps}
	if q := mergeRequests(ls); !reflect.DeepEqual(q, config.Request{}) {
		in.Request = &q
	}
	return in
}

// List returns the built-in providers with the models of the built-in table
// and the configured providers with their configured models, each with its
// capabilities after the config file's overrides. Scripted is left out: it
// has no models, only scripts.
func List(c Config) ([]Info, error) {
	f, err := c.file()
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, name := range []string{"openai", "openai-chat", "anthropic", "deepseek"} {
		b := builtins[name]
		in := Info{Name: name, Protocol: b.protocol, KeyEnv: b.keyEnv, KeySet: c.getenv(b.keyEnv) != "", ToolMode: config.ToolModeNative, Source: "built-in"}
		in.BaseURL = c.getenv(b.baseEnv)
		if in.BaseURL == "" {
			in.BaseURL = b.base
		}
		seen := map[string]bool{}
		for _, k := range knownModels {
			if k.Family != b.family {
				continue
			}
			seen[k.Name] = true
			in.Models = append(in.Models, modelInfo(f, name, b.protocol, config.ToolModeNative, k.Name))
		}
		// Models the config file describes for a built-in provider are
		// listed too, even when the table does not know them; "*" is not
		// a model but the defaults of all of them.
		for _, key := range sortedKeys(f.Models) {
			spec, err := ParseSpec(key)
			if err != nil || spec.Provider != name || spec.Model == "*" || seen[spec.Model] {
				continue
			}
			in.Models = append(in.Models, modelInfo(f, name, b.protocol, config.ToolModeNative, spec.Model))
		}
		out = append(out, in)
	}
	for _, name := range sortedKeys(f.Providers) {
		p := f.Providers[name]
		in := Info{Name: name, Protocol: p.Protocol, BaseURL: p.BaseURL, KeyEnv: p.KeyEnv, KeySet: p.KeyEnv == "" || c.getenv(p.KeyEnv) != "", ToolMode: p.ToolMode, Source: "config"}
		if in.ToolMode == "" {
			in.ToolMode = config.ToolModeNative
		}
		for _, m := range sortedKeys(p.Models) {
			in.Models = append(in.Models, modelInfo(f, name, p.Protocol, p.ToolMode, m))
		}
		out = append(out, in)
	}
	return out, nil
}
