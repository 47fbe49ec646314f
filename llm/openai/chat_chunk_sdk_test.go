package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/reinhq/rein/llm"
)

// The decoding of Chat responses through the SDK's types, as the adapter
// read them until readBody (chat_chunk.go) replaced it: the reference
// readBody is compared with (chat_chunk_test.go).

// sdkReadChunk reads one chunk's data the way readEvent did before.
func (a *chatAssembler) sdkReadChunk(data []byte, emit func(llm.Event)) error {
	if bytes.Contains(data, []byte(`"error"`)) {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 && string(e.Error) != "null" {
			return streamError(a.provider, parseErrorBody(data))
		}
	}
	var chunk openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &chunk); err != nil {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed chunk", Err: err}
	}
	a.sdkChunk(&chunk, emit)
	return nil
}

func (a *chatAssembler) sdkChunk(ch *openai.ChatCompletionChunk, emit func(llm.Event)) {
	if ch.Model != "" {
		a.model = ch.Model
	}
	for i := range ch.Choices {
		choice := &ch.Choices[i]
		if choice.Index != 0 {
			continue
		}
		d := &choice.Delta
		a.sdkReasoningFrom(d.JSON.ExtraFields, emit)
		a.text.write(d.Content, emit)
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			a.callFragment(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments, emit)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
	if ch.JSON.Usage.Valid() {
		a.sdkSetUsage(&ch.Usage, emit)
	}
}

// sdkReadJSON reads a whole completion the way readJSON did before.
func (a *chatAssembler) sdkReadJSON(body io.Reader, emit func(llm.Event)) error {
	raw, err := io.ReadAll(body)
	if err != nil {
		return transportError(a.ctx, a.provider, err)
	}
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 && string(e.Error) != "null" {
		return streamError(a.provider, parseErrorBody(raw))
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(raw, &cc); err != nil {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed body", Err: err}
	}
	if len(cc.Choices) == 0 {
		return &llm.Error{Kind: llm.ServerError, Provider: a.provider, Message: "response without choices"}
	}
	a.model = cc.Model
	for i := range cc.Choices {
		choice := &cc.Choices[i]
		if choice.Index != 0 && i != 0 {
			continue
		}
		m := &choice.Message
		a.sdkReasoningFrom(m.JSON.ExtraFields, emit)
		a.text.write(m.Content, emit)
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			a.callFragment(int64(j), tc.ID, tc.Function.Name, tc.Function.Arguments, emit)
		}
		a.finish = choice.FinishReason
		break
	}
	if cc.JSON.Usage.Valid() {
		a.sdkSetUsage(&cc.Usage, emit)
	}
	a.finishResponse(emit)
	return io.EOF
}

func (a *chatAssembler) sdkReasoningFrom(extra map[string]respjson.Field, emit func(llm.Event)) {
	for _, name := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := extra[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) != nil || s == "" {
			continue
		}
		if !slices.Contains(a.reasoningFields, name) {
			a.reasoningFields = append(a.reasoningFields, name)
		}
		if a.reasoningFields[0] == name {
			a.reasoning = append(a.reasoning, s...)
			emit(llm.Event{Kind: llm.EventReasoning, Delta: s})
		}
	}
	if f, ok := extra["reasoning_details"]; ok {
		var ds []map[string]any
		if json.Unmarshal([]byte(f.Raw()), &ds) == nil {
			for _, d := range ds {
				a.mergeDetail(d)
			}
		}
	}
}

func (a *chatAssembler) sdkSetUsage(u *openai.CompletionUsage, emit func(llm.Event)) {
	a.usage = llm.Usage{
		InputTokens:       u.PromptTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
	}
	if v, ok := u.PromptTokensDetails.JSON.ExtraFields["cache_write_tokens"]; ok {
		var n int64
		if json.Unmarshal([]byte(v.Raw()), &n) == nil {
			a.usage.CacheWriteTokens = n
		}
	}
	usage := a.usage
	emit(llm.Event{Kind: llm.EventUsage, Usage: &usage})
}
