package anthropic

import (
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
)

// body encodes the Messages request for req, streamed or not.
func (m *Model) body(req *llm.Request, stream bool) ([]byte, error) {
	p, temperature, err := m.params(req)
	if err != nil {
		return nil, err
	}
	b, err := p.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return withFields(b, temperature, stream)
}

// params builds the Messages request for req, and the temperature to add to
// it, which the SDK's parameters have no field for.
func (m *Model) params(req *llm.Request) (sdk.MessageNewParams, *float64, error) {
	var p sdk.MessageNewParams
	var temperature *float64
	model := req.Model
	if model == "" {
		model = m.opts.Model
	}
	if model == "" {
		return p, nil, errors.New("no model named in the request or the options")
	}
	p.Model = sdk.Model(model)

	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = m.opts.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens(model)
	}
	if budget := m.opts.ThinkingBudget; budget > 0 {
		// Thinking counts against max_tokens and the API wants the budget
		// below it; the caller's cap is read as the room left for the
		// visible answer.
		if maxTokens <= budget {
			maxTokens += budget
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
	} else if req.Temperature != nil {
		// This SDK version has no temperature field; the API still takes
		// one, except with thinking, where only the default is allowed.
		temperature = req.Temperature
	}
	p.MaxTokens = int64(maxTokens)

	system := req.System
	if m.opts.TextTools && len(req.Tools) > 0 {
		system = joinText(system, textcall.Instructions(req.Tools))
	}
	if system != "" {
		p.System = []sdk.TextBlockParam{{Text: system}}
	}
	p.Messages = messages(req, m.opts.TextTools)
	if !m.opts.TextTools {
		p.Tools, p.ToolChoice = tools(req, m.opts.ParallelToolCalls, m.opts.ThinkingBudget > 0)
	}

	if m.opts.PromptCache {
		markCache(&p)
	}
	return p, temperature, nil
}

// defaultMaxTokens returns max_tokens for a model when nobody chose one: the
// output limit of the Claude 3 models, and for later models a cap that leaves
// room for long tool arguments (a whole file) without reserving the model's
// full output window, which would count against the rate limit.
func defaultMaxTokens(model string) int {
	switch {
	case strings.HasPrefix(model, "claude-3-5-"):
		return 8192
	case strings.HasPrefix(model, "claude-3-") && !strings.HasPrefix(model, "claude-3-7-"):
		return 4096
	default:
		return 16384
	}
}

// messages converts the request's items to Messages turns. Adjacent user-role and tool
// items become one user message holding the tool_result blocks first, then
// the text, as the API requires results to lead the message that answers a
// tool_use.
//
// In text tool mode (DESIGN §5.2) calls go back in the DSML text format at
// the end of their assistant message, as the model writes them, and results
// as one text block leading the user message that follows.
func messages(req *llm.Request, textTools bool) []sdk.MessageParam {
	out := make([]sdk.MessageParam, 0, req.Len())
	var results, texts []sdk.ContentBlockParamUnion
	var textResults []llm.Result
	flushUser := func() {
		if len(textResults) > 0 {
			results = append(results, sdk.NewTextBlock(textcall.FormatResults(textResults)))
			textResults = nil
		}
		if len(results)+len(texts) == 0 {
			return
		}
		blocks := make([]sdk.ContentBlockParamUnion, 0, len(results)+len(texts))
		blocks = append(append(blocks, results...), texts...)
		out = append(out, sdk.NewUserMessage(blocks...))
		results, texts = nil, nil
	}
	for _, it := range req.All() {
		switch it.Role {
		case llm.RoleUser:
			for _, p := range it.Parts {
				if p.Kind == llm.PartText && strings.TrimSpace(p.Text) != "" {
					texts = append(texts, sdk.NewTextBlock(p.Text))
				}
			}
		case llm.RoleTool:
			r := it.Result()
			switch {
			case r == nil:
			case textTools:
				textResults = append(textResults, *r)
			default:
				results = append(results, toolResult(r))
			}
		case llm.RoleAssistant:
			flushUser()
			if blocks := assistantBlocks(it, textTools); len(blocks) > 0 {
				out = append(out, sdk.NewAssistantMessage(blocks...))
			}
		}
	}
	flushUser()
	return out
}

func toolResult(r *llm.Result) sdk.ContentBlockParamUnion {
	b := sdk.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError() {
		b.IsError = param.NewOpt(true)
	}
	if r.Content != "" {
		b.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &b}
}

// assistantBlocks returns the content blocks of an assistant item in order.
// Reasoning travels only back to the provider that produced it, and text the
// API would refuse (empty or blank blocks) is left out. In text tool mode the
// calls become one DSML text block at the end.
func assistantBlocks(it *llm.Item, textTools bool) []sdk.ContentBlockParamUnion {
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(it.Parts))
	var textCalls []llm.Call
	for _, p := range it.Parts {
		switch p.Kind {
		case llm.PartText:
			if strings.TrimSpace(p.Text) != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case llm.PartReasoning:
			if b, ok := reasoningBlock(&p); ok {
				blocks = append(blocks, b)
			}
		case llm.PartCall:
			if p.Call != nil && textTools {
				textCalls = append(textCalls, *p.Call)
			} else if p.Call != nil {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
					ID:    p.Call.ID,
					Name:  p.Call.Name,
					Input: inputObject(p.Call.Args),
				}})
			}
		}
	}
	if len(textCalls) > 0 {
		blocks = append(blocks, sdk.NewTextBlock(textcall.Format(textCalls)))
	}
	return blocks
}

// joinText joins two pieces of prompt text with a blank line.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// reasoningBlock rebuilds a thinking, redacted_thinking or other kept block
// from its opaque payload. Thinking without a signature cannot be verified by
// the API and is dropped.
func reasoningBlock(p *llm.Part) (sdk.ContentBlockParamUnion, bool) {
	o := p.Opaque
	switch {
	case o == nil || o.Provider != Provider:
		return sdk.ContentBlockParamUnion{}, false
	case len(o.Raw) > 0:
		// A block rein has no part kind for (server_tool_use,
		// web_search_tool_result, …) goes back exactly as received. The
		// union only needs one non-nil member to marshal; which one does
		// not matter once its content is overridden.
		raw := param.Override[sdk.TextBlockParam](json.RawMessage(o.Raw))
		return sdk.ContentBlockParamUnion{OfText: &raw}, true
	case o.Encrypted != "":
		return sdk.NewRedactedThinkingBlock(o.Encrypted), true
	case o.Signature != "":
		return sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Signature: o.Signature, Thinking: p.Text}}, true
	}
	return sdk.ContentBlockParamUnion{}, false
}

// inputObject returns a call's arguments as the JSON object tool_use needs.
// Arguments that are not an object (a stream cut inside them, a model that
// wrote invalid JSON) are sent as {}: the result that answered the call
// already told the model what went wrong, and the API would refuse the whole
// request otherwise.
func inputObject(args string) json.RawMessage {
	raw := json.RawMessage(args)
	if !json.Valid(raw) || !isObject(raw) {
		return json.RawMessage(`{}`)
	}
	return raw
}

func isObject(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// tools returns the tool definitions and tool_choice for req (a forced
// tool, req.ForceTool, as {"type":"tool","name":...}); parallel,
// when set (Options.ParallelToolCalls), wins over req.ParallelCalls.
//
// The API refuses tool_use and tool_result blocks in a request that defines
// no tools, so a request without tools whose history holds calls (a forced
// final answer) declares the called names with an open schema and forbids
// new calls.
//
// With extended thinking on (thinking) the API takes only auto and none: a
// forced tool is asked for as auto, and the engine's directive names it.
func tools(req *llm.Request, parallel *bool, thinking bool) ([]sdk.ToolUnionParam, sdk.ToolChoiceUnionParam) {
	specs := req.Tools
	choice := req.ToolChoice
	if len(specs) == 0 {
		specs = calledTools(req)
		choice = llm.ToolChoiceNone
	}
	if len(specs) == 0 {
		return nil, sdk.ToolChoiceUnionParam{}
	}
	out := make([]sdk.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		switch s.Builtin {
		case "":
		case llm.BuiltinWebSearch:
			// The web search server tool: Anthropic runs the searches
			// and returns server_tool_use and web_search_tool_result
			// blocks, kept and replayed as they came (block.part).
			out = append(out, sdk.ToolUnionParam{OfWebSearchTool20250305: &sdk.WebSearchTool20250305Param{}})
			continue
		default:
			continue
		}
		t := sdk.ToolParam{Name: s.Name, InputSchema: inputSchema(s.Schema)}
		if s.Description != "" {
			t.Description = param.NewOpt(s.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &t})
	}
	allow := req.ParallelCalls
	if parallel != nil {
		allow = *parallel
	}
	disable := param.NewOpt(!allow)
	if req.ForceTool != "" && len(req.Tools) > 0 && !thinking {
		return out, sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: req.ForceTool, DisableParallelToolUse: disable}}
	}
	switch choice {
	case llm.ToolChoiceNone:
		return out, sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case llm.ToolChoiceRequired:
		if !thinking {
			return out, sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
		}
	}
	return out, sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
}

func inputSchema(schema json.RawMessage) sdk.ToolInputSchemaParam {
	if len(schema) == 0 || !isObject(schema) {
		return sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	}
	return param.Override[sdk.ToolInputSchemaParam](schema)
}

// calledTools lists, once each and in order, the tools called in the
// request's items.
func calledTools(req *llm.Request) []llm.ToolSpec {
	var specs []llm.ToolSpec
	seen := make(map[string]bool)
	for _, it := range req.All() {
		if it.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range it.Calls() {
			if !seen[c.Name] {
				seen[c.Name] = true
				specs = append(specs, llm.ToolSpec{Name: c.Name})
			}
		}
	}
	return specs
}

// markCache sets prompt-cache breakpoints: the system prompt (which covers
// the tools before it) and the last cacheable block of each of the last two
// messages. The second-to-last one is where the previous round wrote its
// cache entry, so the new round reads it; the last one writes the next. The
// API allows four breakpoints; this uses three.
func markCache(p *sdk.MessageNewParams) {
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = sdk.NewCacheControlEphemeralParam()
	}
	marked := 0
	for i := len(p.Messages) - 1; i >= 0 && marked < 2; i-- {
		if markLastBlock(&p.Messages[i]) {
			marked++
		}
	}
}

func markLastBlock(m *sdk.MessageParam) bool {
	var blocks []sdk.ContentBlockParamUnion
	switch {
	case m.OfUser != nil:
		blocks = m.OfUser.Content
	case m.OfAssistant != nil:
		blocks = m.OfAssistant.Content
	}
	for j := len(blocks) - 1; j >= 0; j-- {
		b := &blocks[j]
		// Thinking blocks cannot carry cache_control, and a kept raw block
		// must go back unchanged.
		if b.OfThinking != nil || b.OfRedactedThinking != nil || (b.OfText != nil && b.OfText.Text == "") {
			continue
		}
		if cc := b.GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			return true
		}
	}
	return false
}
