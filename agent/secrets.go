package agent

import (
	"os"
	"slices"
	"strings"
	"sync"

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

	mu sync.Mutex
	// environ is the environment the redactors of byDir were built from.
	environ []string
	byDir   map[string]*redact.Redactor
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
// and the home directory outside the workspace. Building one costs tens
// of microseconds, so it is kept by dir and rebuilt only when the process
// environment changed since it was built: a key exported later is
// redacted from the next turn on, as before.
func (s *Secrets) Redactor(dir string) func(string) string {
	return s.redactor(dir, os.Environ()).Redact
}

// maxRedactors bounds the redactors kept (one per workspace dir, ~16 KB
// each); past it the cache starts over.
const maxRedactors = 64

// redactor returns the redactor of dir in the environment environ, built
// from that snapshot, so the one kept is exactly the one environ makes.
func (s *Secrets) redactor(dir string, environ []string) *redact.Redactor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byDir == nil || len(s.byDir) >= maxRedactors || !slices.Equal(environ, s.environ) {
		s.environ, s.byDir = environ, make(map[string]*redact.Redactor)
	}
	if r, ok := s.byDir[dir]; ok {
		return r
	}
	r := redact.FromEnviron(redact.Options{Secrets: s.Values(lookup(environ)), Workspace: dir}, environ)
	s.byDir[dir] = r
	return r
}

// lookup returns environ's getenv: the first value of a name, as
// os.Getenv reads it.
func lookup(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, dup := m[k]; !dup {
				m[k] = v
			}
		}
	}
	return func(k string) string { return m[k] }
}
