package sandbox

import "strings"

// keptEnv are never dropped: programs need them and they hold no secret.
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
// SSH_AUTH_SOCK. PATH, HOME, LANG and TERM never are.
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
// without the variables IsSecretName picks out, in the same order. Commands
// a model runs get this environment, so a prompt injection cannot read the
// user's API keys from it.
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
