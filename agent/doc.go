// Package agent assembles what a turn needs, the same for every door
// (rein run, answer, chat, serve, and library users): the tools composed
// from plain switches in the workspace under the sandbox mode and approval
// policy, exec gated on what this machine can isolate (Compose); the
// knowledge a turn reads beyond its history — its prompt blocks, tools,
// gates and the seed of the first user message (Knowledge); the secrets
// its redactor hides (Secrets); and what is known of its model — the
// price that keeps a cost budget, the context window (ApplyModel).
//
// It is where the assembly of a turn moves out of the command line
// (issue 12 §1); the per-thread setup (a thread's model and tools, cached
// for its runs) follows.
package agent
