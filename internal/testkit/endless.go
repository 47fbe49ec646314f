package testkit

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// Faults of a model stream that never ends (DESIGN §12 "Bounded"); every mock
// server injects them. The stream goes on until the client goes away, so
// they test that the client cuts it: at a cap, at its deadline, or at its
// idle timeout.
const (
	// FaultEndlessText streams visible text for ever.
	FaultEndlessText Fault = 200 + iota
	// FaultEndlessArgs starts a call (to the round's first call's name,
	// else "echo") and streams its arguments for ever.
	FaultEndlessArgs
	// FaultStallAfterHeaders sends the headers and the stream's opening
	// event, then nothing.
	FaultStallAfterHeaders
	// FaultEndlessKeepAlive sends keep-alives for ever: SSE comments
	// (Chat, Responses) or ping events (Anthropic), no output.
	FaultEndlessKeepAlive
)

// endlessPiece is the text of one endless delta.
var endlessPiece = strings.Repeat("all work and no play ", 200) // 4,200 bytes

// endlessName is the name of the call an endless-arguments round makes.
func endlessName(calls []MockCall) string {
	if len(calls) > 0 && calls[0].Name != "" {
		return calls[0].Name
	}
	return "echo"
}

// writeEndless writes head, then body over and over (or nothing more when
// body is empty), until the client goes away or a write fails.
func writeEndless(w http.ResponseWriter, done <-chan struct{}, head, body []byte) {
	rc := http.NewResponseController(w)
	w.Write(head)
	rc.Flush()
	if len(body) == 0 {
		<-done
		return
	}
	// Some 64 KB per write, as a fast server would send.
	block := bytes.Repeat(body, max(1, (64<<10)/len(body)))
	for {
		select {
		case <-done:
			return
		default:
		}
		if _, err := w.Write(block); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// isEndless reports whether f is one of the endless faults.
func isEndless(f Fault) bool {
	switch f {
	case FaultEndlessText, FaultEndlessArgs, FaultStallAfterHeaders, FaultEndlessKeepAlive:
		return true
	}
	return false
}

// writeEndlessWhole answers a request that asked for a whole body with one
// that never ends: a JSON body opening with head that never closes the
// string head opened (or, for a stall, sends nothing after head).
func writeEndlessWhole(w http.ResponseWriter, done <-chan struct{}, f Fault, head string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	var body []byte
	if f != FaultStallAfterHeaders {
		body = []byte(endlessPiece)
	}
	writeEndless(w, done, []byte(head), body)
}

func sseData(v any) []byte {
	b, _ := json.Marshal(v)
	return []byte("data: " + string(b) + "\n\n")
}

func sseEvent(typ string, v map[string]any) []byte {
	v["type"] = typ
	b, _ := json.Marshal(v)
	return []byte("event: " + typ + "\ndata: " + string(b) + "\n\n")
}

// endless serves the endless faults of the OpenAI mock, streamed or not (a
// whole body that never ends); it reports whether it did.
func (m *MockServer) endless(w http.ResponseWriter, r *http.Request, round Round, stream bool) bool {
	if !isEndless(round.Fault) {
		return false
	}
	done := r.Context().Done()
	if !stream {
		writeEndlessWhole(w, done, round.Fault, `{"id":"endless","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var head, body []byte
	name := endlessName(round.Calls)
	if m.responses {
		head = sseEvent("response.created", map[string]any{"response": map[string]any{"id": "resp_endless", "model": "mock", "status": "in_progress", "output": []any{}}})
		switch round.Fault {
		case FaultEndlessText:
			head = append(head, sseEvent("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
				"type": "message", "id": "msg_endless", "role": "assistant", "status": "in_progress", "content": []any{}}})...)
			body = sseEvent("response.output_text.delta", map[string]any{"output_index": 0, "item_id": "msg_endless", "content_index": 0, "delta": endlessPiece})
		case FaultEndlessArgs:
			head = append(head, sseEvent("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
				"type": "function_call", "id": "fc_endless", "status": "in_progress", "call_id": "call_endless", "name": name, "arguments": ""}})...)
			body = sseEvent("response.function_call_arguments.delta", map[string]any{"output_index": 0, "item_id": "fc_endless", "delta": endlessPiece})
		case FaultEndlessKeepAlive:
			body = []byte(": keep-alive\n\n")
		}
	} else {
		chunk := func(delta map[string]any) map[string]any {
			return map[string]any{"id": "chatcmpl-endless", "object": "chat.completion.chunk", "model": "mock",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}}
		}
		head = sseData(chunk(map[string]any{"role": "assistant", "content": ""}))
		switch round.Fault {
		case FaultEndlessText:
			body = sseData(chunk(map[string]any{"content": endlessPiece}))
		case FaultEndlessArgs:
			head = append(head, sseData(chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "id": "call_endless", "type": "function", "function": map[string]any{"name": name, "arguments": ""}}}}))...)
			body = sseData(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": endlessPiece}}}}))
		case FaultEndlessKeepAlive:
			body = []byte(": keep-alive\n\n")
		}
	}
	writeEndless(w, done, head, body)
	return true
}

// endless serves the endless faults of the Anthropic mock; it reports
// whether it did.
func (m *AnthropicServer) endless(w http.ResponseWriter, r *http.Request, round AnthropicRound, model string, stream bool) bool {
	if !isEndless(round.Fault) {
		return false
	}
	done := r.Context().Done()
	if !stream {
		writeEndlessWhole(w, done, round.Fault, `{"id":"msg_endless","type":"message","role":"assistant","content":[{"type":"text","text":"`)
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	head := sseEvent("message_start", map[string]any{"message": map[string]any{
		"id": "msg_endless", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	var body []byte
	switch round.Fault {
	case FaultEndlessText:
		head = append(head, sseEvent("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})...)
		body = sseEvent("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": endlessPiece}})
	case FaultEndlessArgs:
		head = append(head, sseEvent("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": "toolu_endless", "name": endlessName(round.Calls), "input": map[string]any{}}})...)
		body = sseEvent("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": endlessPiece}})
	case FaultEndlessKeepAlive:
		body = sseEvent("ping", map[string]any{})
	}
	writeEndless(w, done, head, body)
	return true
}
