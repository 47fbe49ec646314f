package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/provider"
)

// SwitchModel makes spec the model of the thread's next turns (the chat's
// /model): it must resolve (a known provider, its key), it is saved in the
// thread's record so a resumed thread keeps it, and this runtime's runs use
// it from the thread's next run on (the scheduler keeps the settings it
// loaded, so Setup applies the switch over them).
func (r *Runtime) SwitchModel(ctx context.Context, threadID, spec string) error {
	if r.c.Store == nil {
		return errors.New("agent: the runtime has no store; give RuntimeConfig.Store")
	}
	s, err := provider.ParseSpec(spec)
	if err != nil {
		return err
	}
	if r.c.Open != nil {
		_, err = r.c.Open(s)
	} else {
		_, err = provider.Resolve(s, r.c.Provider)
	}
	if err != nil {
		return err
	}
	th, err := r.c.Store.Thread(ctx, threadID)
	if err != nil {
		return err
	}
	th.Settings.Model = s.String()
	// SaveThread, not SetSettings: the model is a column of its own,
	// which SetSettings leaves as it was.
	if err := r.c.Store.SaveThread(ctx, th); err != nil {
		return fmt.Errorf("save the thread's model: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	put(&r.switched, threadID, s.String())
	delete(r.models, threadID)
	return nil
}

// switchedModel is the model SwitchModel chose for the thread, or "".
func (r *Runtime) switchedModel(threadID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.switched[threadID]
}
