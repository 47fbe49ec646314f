package agent

import (
	"os"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/redact"
)

// Secrets is where a turn's secrets come from (DESIGN §7.4), read
// once from the config file: the variables holding the providers' keys,
// and the name=value pairs of the config file that may hold a secret
// (request headers, MCP servers' env and headers). Values are read from
// the environment for every turn, so a key exported while rein serve runs
// is redacted from its next turn on.
type Secrets struct {
	keyEnvs []string
	pairs   []string
}

// NewSecrets reads cfg's providers (built-in and configured, whatever
// their key variables are called) and secret-bearing tables.
func NewSecrets(cfg *config.File) *Secrets {
	s := &Secrets{}
	if infos, err := provider.List(provider.Config{File: cfg}); err == nil {
		for _, in := range infos {
			if in.KeyEnv != "" {
				s.keyEnvs = append(s.keyEnvs, in.KeyEnv)
			}
		}
	}
	if cfg == nil {
		return s
	}
	add := func(m map[string]string) {
		for k, v := range m {
			s.pairs = append(s.pairs, k+"="+v)
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
	for _, srv := range cfg.MCP.Servers {
		add(srv.Env)
		add(srv.Headers)
	}
	return s
}

// Values returns the values: every key variable's (a configured key is
// redacted whatever it looks like, if long enough), and the secret-looking
// values of the pairs, as written and expanded as the MCP servers get them.
func (s *Secrets) Values(getenv func(string) string) []string {
	var out []string
	for _, k := range s.keyEnvs {
		out = append(out, getenv(k))
	}
	pairs := make([]string, 0, 2*len(s.pairs))
	for _, p := range s.pairs {
		pairs = append(pairs, p, os.Expand(p, getenv))
	}
	return append(out, redact.EnvSecrets(pairs)...)
}

// Redactor is the redactor of a turn in the workspace dir: these secrets,
// the secret-looking values of the environment, the known token shapes,
// and the home directory outside the workspace.
func (s *Secrets) Redactor(dir string) func(string) string {
	return redact.FromEnv(redact.Options{Secrets: s.Values(os.Getenv), Workspace: dir}).Redact
}
