package openai

import "github.com/reinhq/rein/llm"

// CheckChatBody checks that the body a Chat model sends for req means the
// same JSON as the SDK's encoding of the same request.
func CheckChatBody(c *Chat, req *llm.Request, stream bool) error {
	return compareChatBody(c, req, stream, c.TextTools())
}

// CheckResponsesBody checks that the body a Responses model sends for req
// means the same JSON as the SDK's encoding of the same request.
func CheckResponsesBody(r *Responses, req *llm.Request, stream bool) error {
	return compareResponsesBody(r, req, stream)
}

// ResponsesBodyForTest returns the body a Responses model sends for req,
// not streamed.
func ResponsesBodyForTest(t interface{ Fatal(...any) }, r *Responses, req *llm.Request) []byte {
	b, err := r.responsesBody(req, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
