// Package faults holds the fault matrix (DESIGN §12): one table-driven test
// that runs a real turn for every fault the mock provider servers of
// internal/testkit inject, over the three wire protocols (Chat Completions,
// Responses, Anthropic Messages). Each row drives the real adapter through
// llm.WithRetry, the real loop.Engine with real tools, and a SQLite store as
// the journal, then checks the outcome, the history invariants of every
// request the mock received, and that the store holds every item of the
// turn.
//
// The package has no code of its own; run it with
//
//	go test ./faults/
//
// and the summary line ("fault matrix: chat 19/19, …") appears in the log.
package faults
