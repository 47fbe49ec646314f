// Package anthropic is rein's adapter for the Anthropic Messages API, built on
// the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// It maps rein's items to Messages content blocks and back without loss:
// thinking blocks keep their text and signature, redacted_thinking blocks keep
// their data, tool_use input is kept as its JSON text, and blocks rein has no
// part kind for (server tool use and its results) are kept verbatim. Thinking
// blocks are replayed unchanged to Anthropic; reasoning produced by other
// providers is never sent.
//
// Streaming and non-streaming calls produce the same events. Errors are
// mapped to [llm.Error] kinds from the HTTP status and the error body's
// error.type, never from the words of a message. The SDK's own retries are
// disabled: wrap the model with [llm.WithRetry], which honours the
// retry-after and retry-after-ms headers this package reads.
package anthropic
