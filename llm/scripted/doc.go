// Package scripted provides a language model that replays a script of
// rounds. rein's own tests and benchmarks use it, `rein demo` runs on it, and
// users test their own tools with it offline: a script says what the model
// answers in each round (thinking, text, tool calls, an error) and, if asked,
// what it expects to receive (a tool's result, the tool choice, the offered
// tools), so a test fails with a message that names the round when the
// program under test sends something else.
//
// A script is built in Go ([Script], [Round], [Call]) and played by [New],
// or read from a YAML or JSON file by [Load] and [Parse] (which return the
// model) or [LoadScript] and [ParseScript] (which return the script);
// docs/scripted.md describes the file format.
//
// Each [Model.Stream] call consumes the next round. A [Model] serves one
// conversation at a time: rounds are handed out in order, so two turns
// running at once would take each other's rounds. The model is nonetheless
// safe for concurrent use, so such a mistake shows up as failed expectations
// rather than as a data race.
package scripted
