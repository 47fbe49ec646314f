// Package agent assembles what a turn needs, the same for every door
// (rein run, answer, chat, serve, and library users): the tools composed
// from plain switches in the workspace under the sandbox mode and approval
// policy, exec gated on what this machine can isolate (Compose); the
// knowledge a turn reads beyond its history — its prompt blocks, tools,
// gates and the seed of the first user message (Knowledge); the secrets
// its redactor hides (Secrets); and what is known of its model — the
// price that keeps a cost budget, the context window (ApplyModel).
//
// Runtime is the per-thread setup of the session runtime, built from a
// plain RuntimeConfig: each thread's model, opened once, its tools
// composed in its workspace and shared where nothing can change them, its
// prompt, redactor, price, window and spans; Runtime.Scheduler starts a
// session.Scheduler over the store with the knowledge seed and the trace
// attached. Continue is how a thread keeps its settings from turn to turn.
//
// Errors name settings, never a command's flags: a door that has flags
// says them in its own words (the typed errors PriceError, SettingError,
// SandboxError and ConflictError carry what it needs).
package agent
