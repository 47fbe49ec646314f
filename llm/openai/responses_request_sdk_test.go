package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
)

// The mapping of a request to the SDK's ResponseNewParams, as the adapter
// sent it through the SDK's encoder until responsesBody replaced it: the
// reference responsesBody is compared with (responses_body_test.go).

// responsesParams maps a request to Responses API parameters.
func (r *Responses) responsesParams(req *llm.Request) (responses.ResponseNewParams, error) {
	model := req.Model
	if model == "" {
		model = r.opts.Model
	}
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(model)}
	textTools := r.opts.TextTools
	system := req.System
	if textTools && len(req.Tools) > 0 {
		system = joinText(system, textcall.Instructions(req.Tools))
	}
	if system != "" {
		p.Instructions = openai.String(system)
	}
	input, err := responsesInput(req.Items, r.opts.Store, textTools)
	if err != nil {
		return p, err
	}
	p.Input.OfInputItemList = input
	p.Store = openai.Bool(r.opts.Store)
	// Without storage the reasoning must travel back encrypted. Models that
	// do not reason refuse the include, so it is asked of reasoning models
	// and whenever reasoning is configured.
	if !r.opts.Store && (r.opts.ReasoningEffort != "" || r.opts.ReasoningSummary != "" || TokenParamFor(model) == MaxCompletionTokens) {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if r.opts.ReasoningEffort != "" || r.opts.ReasoningSummary != "" {
		p.Reasoning = shared.ReasoningParam{
			Effort:  shared.ReasoningEffort(r.opts.ReasoningEffort),
			Summary: shared.ReasoningSummary(r.opts.ReasoningSummary),
		}
	}
	if len(req.Tools) > 0 && !textTools {
		for _, s := range req.Tools {
			switch s.Builtin {
			case "":
			case llm.BuiltinWebSearch:
				p.Tools = append(p.Tools, responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}})
				continue
			default:
				continue
			}
			schema, err := schemaMap(s.Schema)
			if err != nil {
				return p, fmt.Errorf("tool %q: %w", s.Name, err)
			}
			// Strict is sent as false: the Responses API defaults to strict
			// schemas, which ordinary JSON Schemas fail.
			fn := &responses.FunctionToolParam{Name: s.Name, Parameters: schema, Strict: openai.Bool(false)}
			if s.Description != "" {
				fn.Description = openai.String(s.Description)
			}
			p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
		}
		choice := req.ToolChoice
		if choice == "" {
			choice = llm.ToolChoiceAuto
		}
		p.ToolChoice.OfToolChoiceMode = openai.Opt(responses.ToolChoiceOptions(choice))
		if req.ForceTool != "" {
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: req.ForceTool}}
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
		f := &responses.ResponseFormatTextJSONSchemaConfigParam{Name: out.Name, Schema: schema, Strict: openai.Bool(out.Strict)}
		if out.Description != "" {
			f.Description = openai.String(out.Description)
		}
		p.Text.Format.OfJSONSchema = f
	}
	if n := int64(req.MaxOutputTokens); n > 0 {
		p.MaxOutputTokens = openai.Int(n)
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if len(r.opts.Extra) > 0 {
		p.SetExtraFields(r.opts.Extra)
	}
	return p, nil
}

// responsesInput maps history to input items. Reasoning items go back in
// place, before the calls they preceded, when the provider can use them:
// with their encrypted content when nothing is stored, by id when it is.
// Item ids are sent only with storage on: without it the API looks them up
// and fails.
//
// In text tool mode (DESIGN §5.2) calls go back in the DSML text format at
// the end of their assistant message, and results as user-role text leading
// the user message that follows.
func responsesInput(items []llm.Item, store, textTools bool) ([]responses.ResponseInputItemUnionParam, error) {
	out := make([]responses.ResponseInputItemUnionParam, 0, len(items)+2)
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
			out = append(out, easyMessage(responses.EasyInputMessageRoleUser, strings.Join(user, "\n\n")))
			user = user[:0]
		}
	}
	for i := range items {
		it := &items[i]
		switch it.Role {
		case llm.RoleUser:
			flushResults()
			user = append(user, it.Text())
		case llm.RoleAssistant:
			if lastOutput(it) < 0 {
				// Nothing of it can be sent (reasoning alone): the user
				// messages around it stay one message.
				continue
			}
			flushUser()
			out = appendAssistant(out, it, store, textTools)
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
			o := &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(r.CallID)}
			o.Output.OfString = openai.String(r.Content)
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: o})
		default:
			return nil, fmt.Errorf("item %d: unknown role %q", i, it.Role)
		}
	}
	flushUser()
	return out, nil
}

func easyMessage(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
	m := &responses.EasyInputMessageParam{Role: role}
	m.Content.OfString = openai.String(text)
	return responses.ResponseInputItemUnionParam{OfMessage: m}
}

func appendAssistant(out []responses.ResponseInputItemUnionParam, it *llm.Item, store, textTools bool) []responses.ResponseInputItemUnionParam {
	var text strings.Builder
	var textCalls []llm.Call
	flushText := func() {
		if len(textCalls) > 0 {
			s := joinText(text.String(), textcall.Format(textCalls))
			text.Reset()
			text.WriteString(s)
			textCalls = textCalls[:0]
		}
		if text.Len() > 0 {
			out = append(out, easyMessage(responses.EasyInputMessageRoleAssistant, text.String()))
			text.Reset()
		}
	}
	// The API refuses a reasoning item sent back without the item that
	// followed it (a message or a call): reasoning after the last output of
	// the item — a reasoning-only round — stays in history but is not sent.
	last := lastOutput(it)
	for i, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartReasoning:
			if i > last {
				continue
			}
			if raw, search := searchCallJSON(p, store); search {
				if raw != nil {
					flushText()
					ws := param.Override[responses.ResponseFunctionWebSearchParam](json.RawMessage(raw))
					out = append(out, responses.ResponseInputItemUnionParam{OfWebSearchCall: &ws})
				}
				continue
			}
			if item, ok := reasoningInput(p, store); ok {
				flushText()
				out = append(out, item)
			}
		case llm.PartCall:
			if p.Call == nil {
				continue
			}
			if textTools {
				textCalls = append(textCalls, *p.Call)
				continue
			}
			flushText()
			fc := &responses.ResponseFunctionToolCallParam{CallID: p.Call.ID, Name: p.Call.Name, Arguments: argsOrEmpty(p.Call.Args)}
			if store && p.Call.ItemID != "" {
				fc.ID = openai.String(p.Call.ItemID)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: fc})
		}
	}
	flushText()
	return out
}

// reasoningInput rebuilds a reasoning item from the part that kept it. Only
// this protocol's reasoning is replayed, and only in a form the API can use.
func reasoningInput(p llm.Part, store bool) (responses.ResponseInputItemUnionParam, bool) {
	o := p.Opaque
	if o == nil || o.Provider != ProviderResponses {
		return responses.ResponseInputItemUnionParam{}, false
	}
	if !store && o.Encrypted == "" || store && o.ID == "" {
		return responses.ResponseInputItemUnionParam{}, false
	}
	item := map[string]any{"type": "reasoning", "summary": []any{}}
	var kept struct {
		Summary json.RawMessage `json:"summary"`
	}
	if json.Unmarshal(o.Raw, &kept) == nil && len(kept.Summary) > 0 && string(kept.Summary) != "null" {
		item["summary"] = kept.Summary
	} else if p.Text != "" {
		item["summary"] = []any{map[string]any{"type": "summary_text", "text": p.Text}}
	}
	if o.Encrypted != "" {
		item["encrypted_content"] = o.Encrypted
	}
	if store {
		item["id"] = o.ID
	}
	// Override lets the item go without an id, which the SDK's type
	// requires but a stateless request must not send.
	r := param.Override[responses.ResponseReasoningItemParam](item)
	return responses.ResponseInputItemUnionParam{OfReasoning: &r}, true
}
