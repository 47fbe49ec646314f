package testkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/llm"
)

// anthropicRequest is the part of a Messages request the mock reads.
type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlock is one content block of a request message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  *string         `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// DecodeAnthropicRequest reads a Messages request body back into rein items
// (tool_result blocks become tool items, in order, before the user text of
// their message) and checks it: the history invariants of DESIGN §2.5, and
// the rules the API enforces that the invariants do not cover — results
// leading the user message right after the calls they answer, thinking
// blocks signed, no blank text blocks, tool_use input an object, tools
// defined whenever calls appear, max_tokens above the thinking budget. The
// error joins every violation.
func DecodeAnthropicRequest(body []byte) (items []llm.Item, stream bool, model string, err error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, false, "", fmt.Errorf("request body: %w", err)
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if req.Model == "" {
		fail("no model")
	}
	if req.MaxTokens <= 0 {
		fail("max_tokens %d, want > 0", req.MaxTokens)
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" && (t.BudgetTokens < 1024 || t.BudgetTokens >= req.MaxTokens) {
		fail("thinking budget %d must be at least 1024 and below max_tokens %d", t.BudgetTokens, req.MaxTokens)
	}
	anyCalls := false
	var pending []string // tool_use ids of the previous assistant message
	for mi, msg := range req.Messages {
		blocks, err := anthropicBlocks(msg.Content)
		if err != nil {
			fail("message %d: %v", mi, err)
			continue
		}
		if len(blocks) == 0 {
			fail("message %d: empty content", mi)
		}
		switch msg.Role {
		case "assistant":
			if len(pending) > 0 {
				fail("message %d: calls %v of the previous assistant message are not answered by a user message", mi, pending)
			}
			pending = nil
			it := llm.Item{Role: llm.RoleAssistant}
			for bi, b := range blocks {
				p, ids, err := anthropicAssistantPart(b)
				if err != nil {
					fail("message %d block %d: %v", mi, bi, err)
					continue
				}
				pending = append(pending, ids...)
				it.Parts = append(it.Parts, p)
			}
			anyCalls = anyCalls || len(pending) > 0
			items = append(items, it)
		case "user":
			var text []llm.Part
			answered := make(map[string]bool)
			for bi, b := range blocks {
				switch b.Type {
				case "tool_result":
					anyCalls = true
					if len(text) > 0 {
						fail("message %d block %d: tool_result after text", mi, bi)
					}
					answered[b.ToolUseID] = true
					items = append(items, llm.ToolResult(anthropicResult(b)))
				case "text":
					if strings.TrimSpace(b.Text) == "" {
						fail("message %d block %d: blank text block", mi, bi)
					}
					text = append(text, llm.Part{Kind: llm.PartText, Text: b.Text})
				default:
					fail("message %d block %d: unexpected %q block in a user message", mi, bi, b.Type)
				}
			}
			for _, id := range pending {
				if !answered[id] {
					fail("message %d: call %q of the previous message has no tool_result here", mi, id)
				}
			}
			pending = nil
			if len(text) > 0 {
				items = append(items, llm.Item{Role: llm.RoleUser, Parts: text})
			}
		default:
			fail("message %d: role %q", mi, msg.Role)
		}
	}
	if anyCalls && len(req.Tools) == 0 {
		fail("tool_use or tool_result blocks without tool definitions")
	}
	if err := llm.CheckHistory(items); err != nil {
		errs = append(errs, err)
	}
	return items, req.Stream, req.Model, errors.Join(errs...)
}

// anthropicBlocks reads message content, which may be a plain string.
func anthropicBlocks(content json.RawMessage) ([]anthropicBlock, error) {
	content = bytes.TrimSpace(content)
	if len(content) > 0 && content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	err := json.Unmarshal(content, &blocks)
	return blocks, err
}

// anthropicAssistantPart converts one assistant block; ids holds the id of a
// tool_use.
func anthropicAssistantPart(b anthropicBlock) (p llm.Part, ids []string, err error) {
	switch b.Type {
	case "text":
		if strings.TrimSpace(b.Text) == "" {
			return p, nil, errors.New("blank text block")
		}
		return llm.Part{Kind: llm.PartText, Text: b.Text}, nil, nil
	case "thinking":
		if b.Signature == "" || b.Thinking == nil {
			return p, nil, errors.New("thinking block without its thinking and signature")
		}
		return llm.Part{Kind: llm.PartReasoning, Text: *b.Thinking,
			Opaque: &llm.Opaque{Provider: "anthropic", Signature: b.Signature}}, nil, nil
	case "redacted_thinking":
		if b.Data == "" {
			return p, nil, errors.New("redacted_thinking without data")
		}
		return llm.Part{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic", Encrypted: b.Data}}, nil, nil
	case "tool_use":
		in := bytes.TrimSpace(b.Input)
		if len(in) == 0 || in[0] != '{' || !json.Valid(in) {
			return p, nil, fmt.Errorf("tool_use %q input %s is not an object", b.ID, b.Input)
		}
		return llm.Part{Kind: llm.PartCall, Call: &llm.Call{ID: b.ID, Name: b.Name, Args: string(in)}}, []string{b.ID}, nil
	case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result":
		// Provider-executed tools: kept, but not calls rein answers.
		return llm.Part{Kind: llm.PartReasoning, Opaque: &llm.Opaque{Provider: "anthropic"}}, nil, nil
	}
	return p, nil, fmt.Errorf("unexpected %q block in an assistant message", b.Type)
}

// anthropicResult reads a tool_result block; its content is a string or a
// list of text blocks.
func anthropicResult(b anthropicBlock) llm.Result {
	r := llm.Result{CallID: b.ToolUseID, Status: llm.ResultOK}
	if b.IsError {
		r.Status = llm.ResultError
	}
	c := bytes.TrimSpace(b.Content)
	if len(c) > 0 && c[0] == '"' {
		json.Unmarshal(c, &r.Content)
		return r
	}
	var parts []anthropicBlock
	json.Unmarshal(c, &parts)
	for _, p := range parts {
		r.Content += p.Text
	}
	return r
}
