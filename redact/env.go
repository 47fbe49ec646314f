package redact

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
)

// secretWords are the parts of environment variable names whose values are
// secrets: OPENAI_API_KEY, GITHUB_TOKEN, CLIENT_SECRET, PGPASSWORD,
// DB_PASSWD, MYSQL_PWD, AWS_CREDENTIALS, SENTRY_DSN, SESSION_JWT,
// BASIC_AUTH, ...
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "CREDENTIAL", "DSN", "JWT", "AUTH"}

// secretSuffixes are name endings that mark a secret too short to be a
// word of its own: DB_PASS, GH_PAT.
var secretSuffixes = []string{"_PASS", "_PAT"}

// notSecret are names that hold one of secretWords but never a secret:
// the working directories.
var notSecret = map[string]bool{"PWD": true, "OLDPWD": true}

// EnvSecrets returns the secrets of environ ("NAME=value"):
//
//   - the values of variables whose names hold KEY, TOKEN, SECRET,
//     PASSWORD, PASSWD, PWD, CREDENTIAL, DSN, JWT or AUTH, or end in _PASS
//     or _PAT (in any case; not PWD and OLDPWD, the working directories),
//     when the value looks like a secret (LooksSecret);
//   - in every variable, a URL's userinfo password and the URL that holds
//     it (DATABASE_URL=postgres://app:PASSWORD@db/app).
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		if secretName(name) && LooksSecret(val) {
			out = append(out, val)
		}
		if strings.Contains(val, "://") && strings.Contains(val, "@") {
			if u, err := url.Parse(strings.TrimSpace(val)); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					out = append(out, val, pw)
				}
			}
		}
	}
	return out
}

func secretName(name string) bool {
	upper := strings.ToUpper(name)
	if notSecret[upper] {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	for _, suf := range secretSuffixes {
		if strings.HasSuffix(upper, suf) {
			return true
		}
	}
	return false
}

// LooksSecret reports whether a value found under a secret-looking name is
// worth redacting everywhere it appears. It must be at least MinSecretLen
// bytes and either mix two kinds of character (lower case, upper case,
// digits, others) or be at least 16 bytes long: "hunter2hunter2" and a
// long passphrase are, while "disabled", "12345678" and "/run/user/0/key"
// (an absolute path: the file, not the secret) are not, since masking
// them would blank ordinary words, numbers and paths out of every text.
func LooksSecret(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < MinSecretLen || isPath(v) {
		return false
	}
	var lower, upper, digit, other int
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z':
			lower = 1
		case 'A' <= c && c <= 'Z':
			upper = 1
		case '0' <= c && c <= '9':
			digit = 1
		default:
			other = 1
		}
	}
	if lower+upper+other == 0 {
		return false // a number
	}
	return len(v) >= 16 || lower+upper+digit+other >= 2
}

// isPath reports whether v is an absolute path (SSH_AUTH_SOCK,
// GOOGLE_APPLICATION_CREDENTIALS): a slash first and only path characters.
func isPath(v string) bool {
	if v[0] != '/' && !strings.HasPrefix(v, "~/") {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c == '/' || c == '.' || c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// FromEnv returns a redactor for opts plus the secrets of the process
// environment (see EnvSecrets) and, when opts.Home is empty, the user's home
// directory.
func FromEnv(opts Options) *Redactor {
	return FromEnviron(opts, os.Environ())
}

// FromEnviron is FromEnv for the environment environ ("NAME=value", as
// os.Environ returns it): a caller that keeps redactors by the environment
// they were built from builds each from the very snapshot it compares.
func FromEnviron(opts Options, environ []string) *Redactor {
	opts.Secrets = append(append([]string(nil), opts.Secrets...), EnvSecrets(environ)...)
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	return New(opts)
}

// env caches Env's redactor with the environment it was built from.
var env struct {
	mu      sync.Mutex
	environ []string
	r       *Redactor
}

// Env returns the redactor of the process environment: the token shapes
// and the secrets of os.Environ (EnvSecrets), with no home directory (it
// does not know the workspace). It is what the engine redacts with when
// its options name no redactor. The redactor is rebuilt only when the
// environment changed since the last call, so a key exported later is
// redacted too.
func Env() *Redactor {
	environ := os.Environ()
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.r == nil || !slices.Equal(environ, env.environ) {
		env.environ, env.r = environ, New(Options{Secrets: EnvSecrets(environ)})
	}
	return env.r
}
