package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/store"
)

// switchModel makes spec the model of the thread's next turns (chat's
// /model): it must resolve (a known provider, a key), it is stored in the
// thread's settings so a resumed thread keeps it, and this process's runs
// use it from the next turn on.
func (b *serveBackend) switchModel(ctx context.Context, st *store.Store, threadID, spec string) error {
	s, err := chooseModel(spec, b.cfg)
	if err != nil {
		return err
	}
	if _, err := provider.Resolve(s, provider.Config{BaseURL: b.f.baseURL, NoStream: b.noStream, File: b.cfg, Request: b.f.request, Warn: warnTo(b.logw)}); err != nil {
		return err
	}
	th, err := st.Thread(ctx, threadID)
	if err != nil {
		return err
	}
	th.Settings.Model = s.String()
	// SaveThread, not SetSettings: the model is a column of its own.
	if err := st.SaveThread(ctx, th); err != nil {
		return fmt.Errorf("store the thread's model: %w", err)
	}
	b.agent().SetModel(threadID, s)
	return nil
}

// configuredModels are the models the config file names, as
// provider:model, for /model's picker: the default, each provider's
// listed models and each model table (not the provider:* ones).
func configuredModels(f *config.File, current string) []string {
	var out []string
	add := func(s string) {
		if s != "" && !strings.HasSuffix(s, ":*") && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(current)
	if f == nil {
		return out
	}
	add(f.Model)
	for name, p := range f.Providers {
		for m := range p.Models {
			add(name + ":" + m)
		}
	}
	for m := range f.Models {
		add(m)
	}
	if len(out) > 1 {
		slices.Sort(out[1:])
	}
	return out
}
