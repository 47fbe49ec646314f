package cli

import (
	"os"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/redact"
)

// turnRedact is the redactor of a turn in the workspace dir (DESIGN §7.4):
// the keys of the configured providers, the secrets the config file holds
// (request headers, MCP servers' env and headers), the secret-looking
// values of the environment, the known token shapes, and the home
// directory outside the workspace. It is read again for every turn, so a
// key exported while rein serve runs is redacted from its next turn on.
func turnRedact(cfg *config.File, dir string) func(string) string {
	return redact.FromEnv(redact.Options{Secrets: configuredSecrets(cfg, os.Getenv), Workspace: dir}).Redact
}

// configuredSecrets are the secrets the config file names or holds: the
// value of every provider's key variable (built-in and configured, whatever
// the variable's name), and the secret-looking values among the headers of
// every provider and model table and the env and headers of every MCP
// server, expanded as the servers get them.
func configuredSecrets(cfg *config.File, getenv func(string) string) []string {
	var out []string
	if infos, err := provider.List(provider.Config{Getenv: getenv, File: cfg}); err == nil {
		for _, in := range infos {
			if in.KeyEnv != "" {
				out = append(out, getenv(in.KeyEnv))
			}
		}
	}
	if cfg == nil {
		return out
	}
	var pairs []string
	add := func(m map[string]string) {
		for k, v := range m {
			pairs = append(pairs, k+"="+v, k+"="+os.Expand(v, getenv))
		}
	}
	for _, p := range cfg.Providers {
		add(p.Headers)
		for _, m := range p.Models {
			add(m.Headers)
		}
	}
	for _, m := range cfg.Models {
		add(m.Headers)
	}
	for _, s := range cfg.MCP.Servers {
		add(s.Env)
		add(s.Headers)
	}
	return append(out, redact.EnvSecrets(pairs)...)
}
