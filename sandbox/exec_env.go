package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// commandEnv are the variables a command run by a Runner gets from rein's
// environment (DESIGN §7.3), besides every LC_* and the names
// Options.Env adds: what programs need to find themselves, the user's
// locale and terminal, and nothing that holds a secret. The command's
// environment is built from this list, not by guessing which names hold
// secrets: MYSQL_PWD, REDIS_URL=redis://:pw@host, SENTRY_DSN or CI_JOB_JWT
// look like nothing in particular and hold credentials all the same.
var commandEnv = []string{"PATH", "HOME", "LANG", "TERM", "TZ", "USER", "SHELL", "TMPDIR"}

// CommandEnvNames returns the names a command's environment keeps from
// rein's by default; every LC_* variable is kept too.
func CommandEnvNames() []string { return append([]string(nil), commandEnv...) }

// CheckEnvName returns why name cannot be passed to commands
// (Options.Env), or nil: it must be a portable variable name — a letter
// or "_", then letters, digits and "_" — so that what the config file
// accepts is exactly one variable, never a pattern or an assignment.
func CheckEnvName(name string) error {
	if name == "" {
		return errors.New("an empty name")
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("%q is not a variable name: use letters, digits and \"_\", not starting with a digit (one name per entry, no \"=\" or \"*\")", name)
		}
	}
	return nil
}

// CommandEnv returns the variables of env ("NAME=value" entries, as
// os.Environ gives them) that a command may see, in the same order: those
// CommandEnvNames lists, every LC_*, and the names in extra. Nothing else
// passes, whatever its name.
func CommandEnv(env, extra []string) []string {
	keep := make(map[string]bool, len(commandEnv)+len(extra))
	for _, n := range commandEnv {
		keep[n] = true
	}
	for _, n := range extra {
		keep[n] = true
	}
	out := make([]string, 0, len(keep)+4)
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if keep[name] || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}

// keptEnv are never dropped by ScrubEnv: programs need them and they hold
// no secret.
var keptEnv = map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TERM": true}

// secretEnv are names known to hold credentials that the patterns in
// IsSecretName would miss.
var secretEnv = map[string]bool{
	"DATABASE_URL":       true,
	"SSH_AUTH_SOCK":      true, // the user's SSH agent: as good as the keys
	"GPG_AGENT_INFO":     true,
	"NETRC":              true,
	"KUBECONFIG":         true,
	"DOCKER_AUTH_CONFIG": true,
}

// secretSuffixes and secretParts are matched against upper-cased names.
var (
	secretSuffixes = []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD", "_PASS", "_PAT", "_CREDENTIALS", "_AUTH"}
	secretParts    = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL", "SESSION_KEY"}
	secretPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_APPLICATION_", "VAULT_"}
)

// IsSecretName reports whether an environment variable of that name is
// taken to hold a secret: names ending in _KEY, _TOKEN, _SECRET,
// _PASSWORD and the like, names containing TOKEN or SECRET, every AWS_
// and AZURE_ variable, and known ones such as DATABASE_URL and
// SSH_AUTH_SOCK. PATH, HOME, LANG and TERM never are. It is a guess: the
// commands of a Runner get CommandEnv, an allow-list, instead.
func IsSecretName(name string) bool {
	n := strings.ToUpper(name)
	if keptEnv[n] {
		return false
	}
	if secretEnv[n] {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range secretParts {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// ScrubEnv returns env ("NAME=value" entries, as os.Environ gives them)
// without the variables IsSecretName picks out, in the same order. It
// guesses by name; the commands of a Runner get CommandEnv instead, an
// allow-list.
func ScrubEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || IsSecretName(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
