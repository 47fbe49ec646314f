package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/telemetry"
)

// runtime starts the session runtime of chat and serve over the backend's
// store: its runs set up by b, every run's trace kept in the store (rein
// trace THREAD), its events exported to OpenTelemetry when the
// OTEL_EXPORTER_OTLP_* variables ask for it, and a new turn's first
// message seeded from the attached knowledge bases. stop interrupts what
// still runs and waits for it, releases the workspaces and flushes the
// exporters, reporting a failure on logw; call it once, when the command
// ends. When it fails, the backend is closed.
func (b *serveBackend) runtime(ctx context.Context, logw io.Writer) (sched *session.Scheduler, stop func(), err error) {
	x, err := telemetry.FromEnv(ctx, "")
	if err != nil {
		return nil, nil, usageError(err)
	}
	if x.Enabled() {
		b.export = x
	}
	c := session.Config{Store: session.NewSQLStore(b.st), Setup: b.setup, Input: b.seed}
	if b.st != nil {
		c.Traces = b.st
	}
	if b.threads != nil {
		c.Store, c.Traces = b.threads, b.threads
	}
	if b.relay != nil {
		c.Events = b.relay
	}
	sched, err = session.New(c)
	if err != nil {
		b.close()
		b.shutdown(logw)
		return nil, nil, err
	}
	stopRelay := b.relayTo(sched, logw)
	return sched, func() {
		stopRelay()
		// Closing the scheduler interrupts a turn still running and waits
		// for it (its end and trace are stored); then no run uses a
		// workspace or an exporter any more.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		sched.Close(cctx)
		b.close()
		b.shutdown(logw)
	}, nil
}

// shutdown flushes the OpenTelemetry exporters; the spans of an
// interrupted turn are worth a short wait.
func (b *serveBackend) shutdown(logw io.Writer) {
	if b.export == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.export.Shutdown(ctx); err != nil {
		fmt.Fprintln(logw, "rein: OpenTelemetry export:", err)
	}
	b.export = nil
}

// telemetryFor returns the OpenTelemetry handler of the runs of the model
// spec, made on its first run; nil when nothing is exported.
func (b *serveBackend) telemetryFor(spec provider.Spec) (event.Handler, error) {
	if b.export == nil {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.handlers[spec.String()]; ok {
		return h, nil
	}
	model := spec.Model
	if spec.Provider == "scripted" {
		model = "" // a script's path, not a model
	}
	h, err := telemetry.NewHandler(telemetry.Config{
		Provider: telemetry.ProviderName(spec.Provider), Model: model,
		TracerProvider: b.export.TracerProvider, MeterProvider: b.export.MeterProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	put(&b.handlers, spec.String(), event.Handler(h))
	return h, nil
}

// seed is the runtime's session.Input: the first user message of a new
// turn gets the knowledge seed of the thread's attached bases (DESIGN
// §7.3), its sources reported on the run's events. Input without text,
// or a thread whose tools cannot be composed (its run fails anyway), is
// left as it is.
func (b *serveBackend) seed(ctx context.Context, th session.Thread, o loop.Options, turnID string, in []llm.Item) []llm.Item {
	kbs := b.f.kbs
	if b.compose != nil {
		kbs = b.compose.kbs
	}
	if len(kbs) == 0 || len(in) == 0 || in[0].Role != llm.RoleUser {
		// No base attached: nothing to seed, and no second look at the
		// thread's tools.
		return in
	}
	text := in[0].Text()
	if text == "" {
		return in
	}
	tt, err := b.threadTools(ctx, th, b.approval(th.Settings))
	if err != nil || tt.k == nil {
		return in
	}
	seeded := tt.k.Seed(ctx, o.Tools, text, th.ID, turnID, o.Events)
	if seeded == text {
		return in
	}
	it := in[0]
	parts := []llm.Part{{Kind: llm.PartText, Text: seeded}}
	for _, p := range it.Parts {
		if p.Kind != llm.PartText {
			parts = append(parts, p)
		}
	}
	it.Parts = parts
	in[0] = it
	return in
}
