package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
)

// The mapping of a request to the SDK's ChatCompletionNewParams, as the
// adapter sent it through the SDK's encoder until chatBody replaced it: the
// reference chatBody is compared with (chat_body_test.go).

// sdkChatParams maps a request to Chat Completions parameters. In text tool
// mode the tools are not sent as definitions: they are described in the
// system prompt (see sdkChatMessages).
func (c *Chat) sdkChatParams(req *llm.Request, stream, textTools bool) (openai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = c.opts.Model
	}
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	msgs, err := sdkChatMessages(req, textTools)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	if len(req.Tools) > 0 && !textTools {
		tools, err := sdkChatTools(req.Tools)
		if err != nil {
			return p, err
		}
		p.Tools = tools
		choice := req.ToolChoice
		if choice == "" {
			choice = llm.ToolChoiceAuto
		}
		// "none" keeps the definitions: the prompt cache stays warm and
		// servers that want definitions beside earlier tool messages are
		// satisfied.
		p.ToolChoice.OfAuto = openai.String(string(choice))
		if req.ForceTool != "" {
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ForceTool})
		}
		if req.ParallelCalls {
			p.ParallelToolCalls = openai.Bool(true)
		}
	}
	if out := req.Output; out != nil {
		schema, err := schemaMap(out.Schema)
		if err != nil {
			return p, fmt.Errorf("output %q: %w", out.Name, err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: out.Name, Schema: schema, Strict: openai.Bool(out.Strict)}
		if out.Description != "" {
			js.Description = openai.String(out.Description)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	if n := int64(req.MaxOutputTokens); n > 0 {
		tp := c.opts.TokenParam
		if tp == "" {
			tp = TokenParamFor(model)
		}
		if tp == MaxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(n)
		} else {
			p.MaxTokens = openai.Int(n)
		}
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if c.opts.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(c.opts.ReasoningEffort)
	}
	if stream && !c.opts.NoStreamUsage {
		p.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	if len(c.opts.Extra) > 0 {
		p.SetExtraFields(c.opts.Extra)
	}
	return p, nil
}

func sdkChatTools(specs []llm.ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	tools := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		schema, err := schemaMap(s.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", s.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: s.Name, Parameters: schema}
		if s.Description != "" {
			fn.Description = openai.String(s.Description)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(fn))
	}
	return tools, nil
}

// sdkChatMessages maps history to messages. Adjacent user-role items become one
// user message; reasoning goes back only on the current turn's assistant
// messages that carry calls (DeepSeek's thinking mode refuses a tool round
// without it) and is dropped from earlier turns.
//
// In text tool mode (DESIGN §5.2) the system prompt ends with the tools'
// description, calls go back in the DSML text format inside the assistant
// content, and results go back as user-role text; a run of results and
// the user-role items after it form one user message.
func sdkChatMessages(req *llm.Request, textTools bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Items)+1)
	system := req.System
	if textTools && len(req.Tools) > 0 {
		system = joinText(system, textcall.Instructions(req.Tools))
	}
	if system != "" {
		msgs = append(msgs, openai.SystemMessage(system))
	}
	turnStart := currentTurnStart(req)
	var user []string
	var results []llm.Result
	flushResults := func() {
		if len(results) > 0 {
			user = append(user, textcall.FormatResults(results))
			results = results[:0]
		}
	}
	flushUser := func() {
		flushResults()
		if len(user) > 0 {
			msgs = append(msgs, openai.UserMessage(strings.Join(user, "\n\n")))
			user = user[:0]
		}
	}
	for i := range req.Items {
		it := &req.Items[i]
		switch it.Role {
		case llm.RoleUser:
			flushResults()
			user = append(user, it.Text())
		case llm.RoleAssistant:
			flushUser()
			msgs = append(msgs, sdkChatAssistant(it, i >= turnStart, textTools))
		case llm.RoleTool:
			r := it.Result()
			if r == nil {
				return nil, fmt.Errorf("item %d: tool item without a result", i)
			}
			if textTools {
				results = append(results, *r)
				continue
			}
			flushUser()
			msgs = append(msgs, openai.ToolMessage(r.Content, r.CallID))
		default:
			return nil, fmt.Errorf("item %d: unknown role %q", i, it.Role)
		}
	}
	flushUser()
	return msgs, nil
}

// sdkChatAssistant maps an assistant item. In text tool mode its calls are
// written back in the DSML format after its text, as the model writes them.
func sdkChatAssistant(it *llm.Item, currentTurn, textTools bool) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	var text strings.Builder
	var reasoning map[string]any
	var textCalls []llm.Call
	for _, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartCall:
			if p.Call == nil {
				continue
			}
			if textTools {
				textCalls = append(textCalls, *p.Call)
				continue
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: p.Call.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      p.Call.Name,
						Arguments: argsOrEmpty(p.Call.Args),
					},
				},
			})
		case llm.PartReasoning:
			if p.Opaque == nil || p.Opaque.Provider != ProviderChat || len(p.Opaque.Raw) == 0 {
				continue
			}
			var fields map[string]any
			if json.Unmarshal(p.Opaque.Raw, &fields) == nil {
				if reasoning == nil {
					reasoning = fields
				} else {
					maps.Copy(reasoning, fields)
				}
			}
		}
	}
	content := text.String()
	if len(textCalls) > 0 {
		content = joinText(content, textcall.Format(textCalls))
	}
	if content != "" || len(a.ToolCalls) == 0 {
		a.Content.OfString = openai.String(content)
	}
	if currentTurn && (len(a.ToolCalls) > 0 || len(textCalls) > 0) && len(reasoning) > 0 {
		a.SetExtraFields(reasoning)
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}
