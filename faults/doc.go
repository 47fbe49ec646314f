// Package faults holds the fault matrix (DESIGN §12): one table-driven test
// that runs a real turn for every fault the mock provider servers of
// internal/testkit inject, over the three wire protocols (Chat Completions,
// Responses, Anthropic Messages). Each row drives the real adapter through
// llm.WithRetry, the real loop.Engine with real tools, and a SQLite store as
// the journal, then checks the outcome, the history invariants of every
// request the mock received, and that the store holds every item of the
// turn.
//
// The package has no code of its own. The summary line ("fault matrix:
// chat 20/20, responses 20/20, anthropic 22/22") is printed to stdout after
// the tests; go test shows a passing package's output in local directory
// mode or with -v:
//
//	(cd faults && go test)
//	go test -v -run TestFaultMatrix ./faults/ | grep '^fault matrix'
package faults
