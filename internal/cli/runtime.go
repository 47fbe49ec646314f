package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/telemetry"
)

// runtime starts the session runtime of chat and serve over the backend's
// store (agent.Runtime.Scheduler: every run set up per thread, its trace
// kept in the store, a new turn's first message seeded from the attached
// knowledge bases), its events exported to OpenTelemetry when the
// OTEL_EXPORTER_OTLP_* variables ask for it. stop interrupts what still
// runs and waits for it, releases the workspaces and flushes the
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
	sched, err = b.agent().Scheduler()
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
