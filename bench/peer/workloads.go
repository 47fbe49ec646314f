package main

import (
	"context"
	"time"

	"github.com/reinhq/rein/bench/peer/mockchat"
)

// A turn runs one prepared turn to its end and checks the outcome: the
// right number of rounds, and the answer.
type turn func(ctx context.Context) error

// An engine runs the three workloads through one agent loop. The prepare
// functions do everything a turn needs before it starts (the model, the
// agent); only running the returned turn is measured.
type engine struct {
	name string
	// scripted prepares a turn of rounds rounds against an in-memory model:
	// rounds-1 rounds of one noop call with {"n":1}, then an answer, on a
	// thread that already holds history such rounds.
	scripted func(history, rounds int) (turn, error)
	// parallel prepares a turn of two rounds against an in-memory model:
	// calls calls of a read-only tool that sleeps d, then an answer.
	parallel func(calls int, d time.Duration) (turn, error)
	// client starts a process that runs turns of rounds rounds against the
	// mock Chat Completions server at baseURL (an API root such as
	// http://127.0.0.1:1234/v1) through the engine's OpenAI provider, and
	// reports what they cost (the mockchat client protocol).
	client func(baseURL string, rounds int) (*mockchat.Client, error)
}

// The engines, in the order the tables show them.
var engines = []engine{reinEngine, fantasyEngine, fantasySeqEngine}

// noopArgs are the arguments of every noop call in every workload.
const noopArgs = `{"n":1}`

// answer is the text of a turn's last round.
const answer = mockchat.Answer
