// Package agent assembles what a turn needs, the same for every door
// (rein run, answer, chat, serve, and library users): the knowledge a
// turn reads beyond its history — its prompt blocks, tools, gates and the
// seed of the first user message — and the secrets its redactor hides.
//
// It is where the assembly of a turn moves out of the command line
// (issue 12 §1): composition, exec gating and per-thread setup follow.
package agent
