package provider

import "strings"

// bareFamilies map the first part of a model name to the built-in provider
// that serves it, so `--model gpt-5` means openai:gpt-5 as users of the
// vendors' own tools expect. Order matters only for readability: no prefix
// is a prefix of another's names.
var bareFamilies = []struct {
	prefix   string
	provider string
	// whole says the prefix may also be the whole name (o3, o4-mini).
	whole bool
}{
	{"gpt-", "openai", false},
	{"chatgpt-", "openai", false},
	{"o1", "openai", true},
	{"o3", "openai", true},
	{"o4", "openai", true},
	{"claude-", "anthropic", false},
	{"deepseek-", "deepseek", false},
}

// BareProvider returns the built-in provider of a model named without one
// (gpt-…, chatgpt-…, o1…/o3…/o4… → openai; claude-… → anthropic;
// deepseek-… → deepseek), and false for a name it cannot place.
func BareProvider(model string) (string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	for _, f := range bareFamilies {
		if !strings.HasPrefix(m, f.prefix) {
			continue
		}
		rest := m[len(f.prefix):]
		if f.whole && rest != "" && rest[0] != '-' {
			// o1 and o3 name families; "o3x" or "o1234" is not one of them.
			continue
		}
		if !f.whole && rest == "" {
			continue
		}
		return f.provider, true
	}
	return "", false
}
