// Package llm is rein's provider-neutral model API: the items a conversation
// is made of, the request sent to a model, the streamed events a model
// returns, usage, and the typed errors providers map to.
//
// The shapes are chosen to carry everything the three wire protocols return
// (Chat Completions, Responses, Anthropic Messages) without loss, so a turn can
// be replayed to the provider exactly as the provider requires: an assistant
// item is an ordered list of parts (reasoning, text, calls), each part may hold
// the provider's opaque payload verbatim, and call arguments are kept as the raw
// text received.
package llm
