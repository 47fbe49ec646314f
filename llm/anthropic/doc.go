// Package anthropic is rein's adapter for the Anthropic Messages API, built on
// the official SDK's types (github.com/anthropics/anthropic-sdk-go/v2): they
// encode the request and read error bodies and whole responses. The requests
// go out through net/http and the event stream is read with llm/internal/sse and
// gjson, as the SDK's client and decoder did but faster (transport.go,
// stream.go; checked against the SDK's client on every recorded exchange).
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
// error.type, and from the words of a message only for the API's two fixed
// context-overflow messages (see mapError). Each request is sent once: wrap
// the model with [llm.WithRetry], which honours the retry-after and
// retry-after-ms headers this package reads.
package anthropic
