// Package record holds the nouns a thread is made of, as every layer
// names them: a Thread with its Settings, a Turn with its Status and
// StopReason, and the Pause a turn waits on. The engine (package loop)
// produces them, the store persists them and the session runtime and the
// server hand them on; each used to have its own copy and a converter
// between each pair (issue 12 §4).
//
// The package is a leaf: it imports llm and tool for the item and question
// types and nothing that runs a turn or touches a database, so the store
// does not depend on the engine and a client can read a record without
// either. How a record is spelled on the wire is package protocol's; how it
// is stored is package store's.
package record
