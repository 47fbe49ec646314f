package openai

import (
	"encoding/json"
	"io"

	"github.com/openai/openai-go/v3/responses"

	"github.com/reinhq/rein/llm"
)

// The reading of Responses events through the SDK's union type alone, as
// the adapter did until readData (responses.go) read the deltas with gjson:
// the reference readData is compared with (responses_event_test.go).

func (a *responsesAssembler) sdkReadData(data []byte, emit func(llm.Event)) error {
	var ev responses.ResponseStreamEventUnion
	if err := json.Unmarshal(data, &ev); err != nil {
		return &llm.Error{Kind: llm.StreamInterrupted, Provider: a.provider, Message: "malformed event", Err: err}
	}
	switch ev.Type {
	case "response.created", "response.in_progress":
		if ev.Response.Model != "" {
			a.model = string(ev.Response.Model)
		}
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			a.startCall(ev.OutputIndex, &ev.Item, emit)
		}
	case "response.output_text.delta", "response.refusal.delta":
		a.text.write(ev.Delta, emit)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		emit(llm.Event{Kind: llm.EventReasoning, Delta: ev.Delta})
	case "response.reasoning_summary_part.added":
		if ev.SummaryIndex > 0 {
			// Summary parts are paragraphs; keep them apart on screen as in
			// the part's text.
			emit(llm.Event{Kind: llm.EventReasoning, Delta: "\n\n"})
		}
	case "response.function_call_arguments.delta":
		if c := a.calls[ev.OutputIndex]; c != nil && ev.Delta != "" {
			c.args = append(c.args, ev.Delta...)
			emit(llm.Event{Kind: llm.EventCallDelta, Index: c.ordinal, Delta: ev.Delta})
		}
	case "response.output_item.done":
		if a.items == nil {
			a.items = make(map[int64]responses.ResponseOutputItemUnion)
		}
		a.items[ev.OutputIndex] = ev.Item
		if ev.Item.Type == "function_call" {
			c := a.calls[ev.OutputIndex]
			if c == nil {
				c = a.startCall(ev.OutputIndex, &ev.Item, emit)
			}
			c.args = []byte(ev.Item.Arguments.OfString)
			if !c.done {
				c.done = true
				emit(llm.Event{Kind: llm.EventCallDone, Index: c.ordinal, Call: a.callOf(c, &ev.Item)})
			}
		}
	case "response.completed", "response.incomplete":
		resp := &ev.Response
		if len(resp.Output) == 0 {
			resp.Output = a.collected()
		}
		a.finishResponse(resp, emit)
		return io.EOF
	case "response.failed":
		e := ev.Response.Error
		return streamError(a.provider, errorBody{Message: e.Message, Type: e.Type, Code: quote(string(e.Code))})
	case "error":
		return streamError(a.provider, errorBody{Message: ev.Message, Code: quote(ev.Code)})
	}
	return nil
}
