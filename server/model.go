package server

import (
	"slices"
	"strings"
)

// fileProviders are the providers whose model is a file on the server's
// machine: llm/scripted reads the script it names. Only the server's own
// command line may name them (DESIGN §9); a client naming one could make
// the server read any file it can, and learn of it from the errors.
var fileProviders = []string{"scripted"}

// checkClientModel refuses a model spec from a client that names a file
// rather than a configured provider and model. Empty is the server's own
// model.
func checkClientModel(spec string) error {
	if spec == "" {
		return nil
	}
	p, _, _ := strings.Cut(spec, ":")
	p = strings.ToLower(strings.TrimSpace(p))
	if slices.Contains(fileProviders, p) {
		return invalidParams("model: the %s provider reads a file on the server's machine, which a client may not name; "+
			"name a configured provider and model (PROVIDER:MODEL), or leave model empty for the server's own (rein serve --model)", p)
	}
	return nil
}
