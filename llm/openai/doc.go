// Package openai adapts OpenAI's two wire protocols to [llm.Model] on top of
// the official openai-go SDK:
//
//   - [NewChat] speaks Chat Completions, the protocol of OpenAI and of every
//     OpenAI-compatible server (DeepSeek, vLLM, Ollama, llama.cpp, OpenRouter,
//     Groq, xAI, …);
//   - [NewResponses] speaks the Responses API.
//
// Both keep everything the provider returns in the response parts (raw text
// with inline <think> blocks, reasoning with its opaque payload, calls with
// their raw argument text) and replay it the way the provider requires. Both
// stream or not, and produce the same events either way. Errors are
// [*llm.Error] values classified from status codes and the provider's error
// code and type fields; the SDK's own retries are off so that [llm.WithRetry]
// alone decides, honouring Retry-After.
package openai
