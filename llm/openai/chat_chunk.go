package openai

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
	"github.com/reinhq/rein/llm/transport"
)

// The Chat Completions response is read by walking its JSON once with gjson
// rather than decoding it into the SDK's ChatCompletionChunk: the SDK's
// reflective decoder was a fifth of the whole process's CPU in a turn over
// HTTP (bench/RESULTS-providers.md). chat_chunk_test.go checks this reader
// against the SDK's decoding of every recorded stream and body, and a fuzz
// target against arbitrary chunks.

var errMalformed = errors.New("not a JSON object")

// readEvent reads one server-sent event. A stream that ends without [DONE]
// was cut unless it already sent its finish reason: some servers (the
// Hugging Face router among them) close the stream right after it.
func (a *chatAssembler) readEvent(r *sse.Reader, emit func(llm.Event)) error {
	if !r.Next() {
		if err := r.Err(); err != nil {
			return transportError(a.ctx, a.provider, err)
		}
		if err := a.ctx.Err(); err != nil {
			return err
		}
		if a.finish != "" {
			a.finishResponse(emit)
			return io.EOF
		}
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "stream ended without [DONE] or a finish reason"}
	}
	data := r.Data()
	if len(data) >= 6 && string(data[:6]) == "[DONE]" {
		a.finishResponse(emit)
		return io.EOF
	}
	return a.readBody(data, false, emit)
}

// readJSON turns a whole chat.completion body into the same events a stream
// would have produced.
func (a *chatAssembler) readJSON(body io.Reader, emit func(llm.Event)) error {
	raw, err := transport.ReadAll(body)
	if err != nil {
		return transportError(a.ctx, a.provider, err)
	}
	if err := a.readBody(raw, true, emit); err != nil {
		return err
	}
	a.finishResponse(emit)
	return io.EOF
}

// readBody reads a chunk (whole false) or a whole completion (whole true):
// the same object but for "message" in place of "delta" and calls without
// an index.
func (a *chatAssembler) readBody(data []byte, whole bool, emit func(llm.Event)) error {
	what := "malformed chunk"
	if whole {
		what = "malformed body"
	}
	if !gjson.ValidBytes(data) {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: what, Err: errMalformed}
	}
	// ParseBytes copies the data: the strings handed on in events outlive
	// the reader's buffer.
	root := gjson.ParseBytes(data)
	if root.Type == gjson.Null {
		return nil
	}
	if !root.IsObject() {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: what, Err: errMalformed}
	}
	var choices, usage, errv gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type == gjson.String && v.Str != "" {
				a.model = v.Str
			}
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errv = v
		}
		return true
	})
	if errv.Exists() && errv.Type != gjson.Null {
		return streamError(a.provider, parseErrorBody(data))
	}
	// The chunk id is ignored: some compatible servers change it mid-stream.
	first, read := true, false
	choices.ForEach(func(_, c gjson.Result) bool {
		read = a.choice(c, whole, first, emit)
		first = false
		// A whole completion is read from one choice only.
		return !(whole && read)
	})
	if whole && !read {
		return &llm.Error{Kind: llm.ServerError, Provider: a.provider, Message: "response without choices"}
	}
	if usage.IsObject() {
		a.setUsage(usage, emit)
	}
	return nil
}

// choice reads one choice and reports whether it was the one followed:
// index 0, or for a whole completion also the first choice whatever its
// index says.
func (a *chatAssembler) choice(c gjson.Result, whole, first bool, emit func(llm.Event)) bool {
	var index int64
	var delta, finish gjson.Result
	field := "delta"
	if whole {
		field = "message"
	}
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			index = v.Int()
		case field:
			delta = v
		case "finish_reason":
			finish = v
		}
		return true
	})
	if index != 0 && !(whole && first) {
		return false
	}
	var content, reasoningContent, reasoning, details, calls gjson.Result
	delta.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content":
			content = v
		case "reasoning_content":
			reasoningContent = v
		case "reasoning":
			reasoning = v
		case "reasoning_details":
			details = v
		case "tool_calls":
			calls = v
		}
		return true
	})
	a.reasoningField("reasoning_content", reasoningContent, emit)
	a.reasoningField("reasoning", reasoning, emit)
	if details.IsArray() {
		var ds []map[string]any
		if json.Unmarshal([]byte(details.Raw), &ds) == nil {
			for _, d := range ds {
				a.mergeDetail(d)
			}
		}
	}
	if content.Type == gjson.String {
		a.text.write(content.Str, emit)
	}
	var j int64
	calls.ForEach(func(_, tc gjson.Result) bool {
		a.callFragmentOf(tc, j, whole, emit)
		j++
		return true
	})
	if finish.Type == gjson.String && finish.Str != "" {
		a.finish = finish.Str
	}
	return true
}

// callFragmentOf reads one entry of tool_calls. Arguments sent as a JSON
// object (some compatible servers do) are kept as its text.
func (a *chatAssembler) callFragmentOf(tc gjson.Result, position int64, whole bool, emit func(llm.Event)) {
	var index int64
	var id, name, args string
	tc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			index = v.Int()
		case "id":
			id = stringOf(v)
		case "function":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "name":
					name = stringOf(v)
				case "arguments":
					if v.IsObject() {
						args = v.Raw
					} else {
						args = stringOf(v)
					}
				}
				return true
			})
		}
		return true
	})
	if whole {
		index = position
	}
	a.callFragment(index, id, name, args, emit)
}

func stringOf(v gjson.Result) string {
	if v.Type == gjson.String {
		return validText(v.Str)
	}
	return ""
}

// validText is s with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, as encoding/json decodes a string (the SDK's reading, and
// what the store writes back): a stream's text reads the same live and
// stored.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// reasoningField reads a reasoning field compatible servers add to a
// message or delta: reasoning_content (DeepSeek, GLM, Qwen) or reasoning
// (OpenRouter, Groq, vLLM).
func (a *chatAssembler) reasoningField(name string, v gjson.Result, emit func(llm.Event)) {
	if v.Type != gjson.String || v.Str == "" {
		return
	}
	if !slices.Contains(a.reasoningFields, name) {
		a.reasoningFields = append(a.reasoningFields, name)
	}
	// Servers that send both carry the same text twice; keep the first.
	if a.reasoningFields[0] == name {
		text := validText(v.Str)
		a.reasoning = append(a.reasoning, text...)
		emit(llm.Event{Kind: llm.EventReasoning, Delta: text})
	}
}

func (a *chatAssembler) setUsage(u gjson.Result, emit func(llm.Event)) {
	a.usage = llm.Usage{}
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			a.usage.InputTokens = v.Int()
		case "completion_tokens":
			a.usage.OutputTokens = v.Int()
		case "prompt_tokens_details":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "cached_tokens":
					a.usage.CachedInputTokens = v.Int()
				case "cache_write_tokens":
					a.usage.CacheWriteTokens = v.Int()
				}
				return true
			})
		case "completion_tokens_details":
			if r := v.Get("reasoning_tokens"); r.Exists() {
				a.usage.ReasoningTokens = r.Int()
			}
		}
		return true
	})
	usage := a.usage
	emit(llm.Event{Kind: llm.EventUsage, Usage: &usage})
}
