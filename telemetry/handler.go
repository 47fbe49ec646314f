// Package telemetry turns the event stream of turns (package event) into
// OpenTelemetry spans and metrics that follow the GenAI semantic
// conventions (DESIGN §10): a turn span, a span per round under it, and
// under each round the model call (chat) and the tool calls (execute_tool),
// which overlap when the tools ran in parallel.
//
// Every span takes its start and end from the events' own times, so a
// trace shows what happened, not when the handler got round to it. The
// handler holds no goroutines; exporting is the SDK's business (see
// FromEnv).
package telemetry

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
)

// ScopeName is the instrumentation scope of rein's spans and metrics.
const ScopeName = "github.com/reinhq/rein/telemetry"

// rein's own attributes, beside the GenAI conventions.
const (
	AttrTurnID         = attribute.Key("rein.turn.id")
	AttrTurnStatus     = attribute.Key("rein.turn.status")
	AttrTurnStopReason = attribute.Key("rein.turn.stop_reason")
	AttrTurnRounds     = attribute.Key("rein.turn.rounds")
	AttrTurnResumed    = attribute.Key("rein.turn.resumed")
	AttrRound          = attribute.Key("rein.round")
	AttrRoundPhase     = attribute.Key("rein.round.phase")
	AttrRoundRole      = attribute.Key("rein.round.role")
	AttrCost           = attribute.Key("rein.cost_usd")
	AttrToolStatus     = attribute.Key("rein.tool.status")
	AttrToolDuration   = attribute.Key("rein.tool.duration_ms")
	AttrPauseKind      = attribute.Key("rein.pause.kind")
	AttrPauseDecision  = attribute.Key("rein.pause.decision")
	AttrPauseOpen      = attribute.Key("rein.pause.unanswered")
	AttrWarningCode    = attribute.Key("rein.warning.code")
	AttrMessage        = attribute.Key("rein.message")
	AttrRetryAttempt   = attribute.Key("rein.retry.attempt")
	AttrRetryMax       = attribute.Key("rein.retry.max")
	AttrRetryDelay     = attribute.Key("rein.retry.delay_ms")
)

// Config says where spans and metrics go and names what the events do not
// carry: the provider and the model.
type Config struct {
	// Provider is the gen_ai.provider.name (see ProviderName).
	Provider string
	// Model is the gen_ai.request.model.
	Model string
	// TracerProvider receives the spans; nil records none.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the metrics; nil records none.
	MeterProvider metric.MeterProvider
}

// Handler is an event.Handler that records turns as spans and metrics. It
// may receive the events of several turns at once (a server); events of one
// turn must arrive in order, as the engine sends them.
type Handler struct {
	cfg    Config
	tracer trace.Tracer
	m      instruments

	mu    sync.Mutex
	turns map[string]*turnState
}

var _ event.Handler = (*Handler)(nil)

// NewHandler returns a handler recording to cfg's providers.
func NewHandler(cfg Config) (*Handler, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	m, err := newInstruments(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Handler{
		cfg:    cfg,
		tracer: tp.Tracer(ScopeName),
		m:      m,
		turns:  make(map[string]*turnState),
	}, nil
}

// turnState is one turn in progress: its span and its open children.
type turnState struct {
	ctx   context.Context // carries the turn span
	span  trace.Span
	round *roundState
	// tools and waits are open tool and pause spans by call id.
	tools map[string]trace.Span
	waits map[string]trace.Span
	// usage and cost are the cumulative totals of the last usage event:
	// a round's own share is the difference.
	usage llm.Usage
	cost  float64
}

// roundState is one round in progress.
type roundState struct {
	ctx      context.Context // carries the round span
	span     trace.Span
	chat     trace.Span
	chatFrom time.Time
	// chatTo is when the model's stream ended (the assistant item was
	// added, or the round completed without one); zero while it streams.
	chatTo  time.Time
	endAt   time.Time
	finish  string // the finish reason; "" when no response came
	failure string // why the model call failed, when known
}

// Handle records e.
func (h *Handler) Handle(e event.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.turn(e)
	switch e.Type {
	case event.RoundStarted:
		h.closeRound(t, e.Time)
		h.startRound(t, e)
	case event.ItemAdded:
		if r := t.round; r != nil && r.chatTo.IsZero() && e.Item != nil && e.Item.Role == llm.RoleAssistant {
			r.chatTo = e.Time
		}
	case event.Retry:
		if r := t.round; r != nil {
			r.chat.AddEvent("retry", trace.WithTimestamp(e.Time), trace.WithAttributes(
				AttrRetryAttempt.Int(e.Attempt), AttrRetryMax.Int(e.Max),
				AttrRetryDelay.Float64(e.Duration), AttrMessage.String(e.Content)))
		}
	case event.ToolStarted:
		h.startTool(t, e)
	case event.Result:
		h.endTool(t, e)
	case event.RoundCompleted:
		if r := t.round; r != nil {
			r.endAt, r.finish = e.Time, e.Code
			if r.chatTo.IsZero() {
				r.chatTo = e.Time
			}
			r.span.SetAttributes(AttrRoundRole.String(e.Role))
		}
	case event.Usage:
		h.usage(t, e)
	case event.Warning:
		h.warning(t, e)
	case event.PauseRequested:
		h.closeRound(t, e.Time)
		h.startWait(t, e)
	case event.PauseResolved:
		if s, ok := t.waits[e.CallID]; ok {
			s.SetAttributes(AttrPauseDecision.String(e.Status))
			s.End(trace.WithTimestamp(e.Time))
			delete(t.waits, e.CallID)
		}
	case event.TurnCompleted:
		h.endTurn(t, e)
		delete(h.turns, e.TurnID)
	}
}

// turn returns the state of e's turn, starting its span on the first event
// seen: turn_started, or any event of a resumed turn.
func (h *Handler) turn(e event.Event) *turnState {
	if t, ok := h.turns[e.TurnID]; ok {
		return t
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName("rein"),
		AttrTurnID.String(e.TurnID),
	}
	attrs = h.modelAttrs(attrs)
	if e.ThreadID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(e.ThreadID))
	}
	if e.Type != event.TurnStarted {
		attrs = append(attrs, AttrTurnResumed.Bool(true))
	}
	ctx, span := h.tracer.Start(context.Background(), "invoke_agent rein",
		trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	t := &turnState{ctx: ctx, span: span, tools: make(map[string]trace.Span), waits: make(map[string]trace.Span)}
	h.turns[e.TurnID] = t
	return t
}

func (h *Handler) modelAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	if h.cfg.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(h.cfg.Provider))
	}
	if h.cfg.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(h.cfg.Model))
	}
	return attrs
}

func (h *Handler) startRound(t *turnState, e event.Event) {
	r := &roundState{chatFrom: e.Time}
	r.ctx, r.span = h.tracer.Start(t.ctx, "round", trace.WithTimestamp(e.Time), trace.WithAttributes(
		AttrRound.Int(e.Round), AttrRoundPhase.String(string(e.Phase))))
	name := "chat"
	if h.cfg.Model != "" {
		name += " " + h.cfg.Model
	}
	_, r.chat = h.tracer.Start(r.ctx, name, trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(h.modelAttrs([]attribute.KeyValue{semconv.GenAIOperationNameChat, AttrRound.Int(e.Round), AttrRoundPhase.String(string(e.Phase))})...))
	t.round = r
}

// usage takes the round's share of the cumulative usage and ends the round,
// unless its model call failed: then the warning that says why follows.
func (h *Handler) usage(t *turnState, e event.Event) {
	r := t.round
	if e.Usage == nil {
		return
	}
	d := diff(*e.Usage, t.usage)
	cost := e.Cost - t.cost
	t.usage, t.cost = *e.Usage, e.Cost
	if r == nil {
		return
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(d.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(d.OutputTokens)),
	}
	if d.CachedInputTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(int(d.CachedInputTokens)))
	}
	if d.CacheWriteTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(int(d.CacheWriteTokens)))
	}
	if d.ReasoningTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(int(d.ReasoningTokens)))
	}
	if cost > 0 {
		attrs = append(attrs, AttrCost.Float64(cost))
	}
	r.chat.SetAttributes(attrs...)
	h.m.tokens(t.ctx, h.cfg, d)
	if r.finish != "" {
		h.closeRound(t, e.Time)
	}
}

// diff returns the usage between two cumulative totals.
func diff(now, before llm.Usage) llm.Usage {
	return llm.Usage{
		InputTokens:       now.InputTokens - before.InputTokens,
		OutputTokens:      now.OutputTokens - before.OutputTokens,
		CachedInputTokens: now.CachedInputTokens - before.CachedInputTokens,
		CacheWriteTokens:  now.CacheWriteTokens - before.CacheWriteTokens,
		ReasoningTokens:   now.ReasoningTokens - before.ReasoningTokens,
	}
}

// closeRound ends the open round, if any, at the latest at the given time.
// A round whose model call never gave a final response is marked failed.
func (h *Handler) closeRound(t *turnState, at time.Time) {
	r := t.round
	if r == nil {
		return
	}
	t.round = nil
	chatTo := r.chatTo
	if chatTo.IsZero() {
		chatTo = at
	}
	end := r.endAt
	if end.IsZero() {
		end = at
	}
	errType := ""
	if r.finish != "" {
		r.chat.SetAttributes(semconv.GenAIResponseFinishReasons(r.finish))
	} else {
		errType = "no_response"
		msg := r.failure
		if msg == "" {
			msg = "the model call ended without a final response"
		}
		r.chat.SetStatus(codes.Error, msg)
		r.chat.SetAttributes(semconv.ErrorTypeKey.String(errType))
		r.span.SetStatus(codes.Error, msg)
	}
	r.chat.End(trace.WithTimestamp(chatTo))
	h.m.duration(t.ctx, h.cfg, semconv.GenAIOperationNameChat.Value.AsString(), chatTo.Sub(r.chatFrom), errType)
	// Tools still open belong to this round: a round ends after its
	// results, so they can only be abandoned ones.
	for id, s := range t.tools {
		s.SetStatus(codes.Error, "the tool had not finished when its round ended")
		s.End(trace.WithTimestamp(end))
		delete(t.tools, id)
	}
	r.span.End(trace.WithTimestamp(end))
}

func (h *Handler) startTool(t *turnState, e event.Event) {
	parent := t.ctx
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(e.Name),
		semconv.GenAIToolCallID(e.CallID),
		semconv.GenAIToolTypeKey.String("function"),
	}
	if r := t.round; r != nil {
		parent = r.ctx
	}
	if e.Round > 0 {
		// An approved call runs after its round ended, under the turn;
		// the attribute still names the round that made it.
		attrs = append(attrs, AttrRound.Int(e.Round))
	}
	_, s := h.tracer.Start(parent, "execute_tool "+e.Name, trace.WithTimestamp(e.Time),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	t.tools[e.CallID] = s
}

// endTool ends a tool's span with its result. A call that never ran
// (refused, a duplicate, not started) still gets a span, of no length, so
// every call of a round appears.
func (h *Handler) endTool(t *turnState, e event.Event) {
	s, ok := t.tools[e.CallID]
	if !ok {
		h.startTool(t, e)
		s = t.tools[e.CallID]
	}
	delete(t.tools, e.CallID)
	s.SetAttributes(AttrToolStatus.String(e.Status), AttrToolDuration.Float64(e.Duration))
	errType := ""
	switch llm.ResultStatus(e.Status) {
	case llm.ResultError, llm.ResultAborted:
		errType = e.Status
		s.SetStatus(codes.Error, firstLine(e.Content, 200))
		s.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	s.End(trace.WithTimestamp(e.Time))
	if ok {
		h.m.duration(t.ctx, h.cfg, semconv.GenAIOperationNameExecuteTool.Value.AsString(),
			time.Duration(e.Duration*float64(time.Millisecond)), errType)
	}
}

// warning adds a warning as a span event of the round it is about, or of
// the turn. A forced finish after a failed model call says why it failed.
func (h *Handler) warning(t *turnState, e event.Event) {
	opts := trace.WithAttributes(AttrWarningCode.String(e.Code), AttrMessage.String(e.Content))
	r := t.round
	if r == nil {
		t.span.AddEvent("warning", trace.WithTimestamp(e.Time), opts)
		return
	}
	r.span.AddEvent("warning", trace.WithTimestamp(e.Time), opts)
	if r.finish == "" && e.Code == event.WarnForced {
		r.failure = e.Content
		h.closeRound(t, e.Time)
	}
}

func (h *Handler) startWait(t *turnState, e event.Event) {
	attrs := []attribute.KeyValue{semconv.GenAIToolCallID(e.CallID), semconv.GenAIToolName(e.Name)}
	if e.Pause != nil {
		attrs = append(attrs, AttrPauseKind.String(string(e.Pause.Kind)))
	}
	_, s := h.tracer.Start(t.ctx, "await_user", trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	t.waits[e.CallID] = s
}

func (h *Handler) endTurn(t *turnState, e event.Event) {
	h.closeRound(t, e.Time)
	for id, s := range t.waits {
		// The turn ended paused: the wait goes on beyond this trace.
		s.SetAttributes(AttrPauseOpen.Bool(true))
		s.End(trace.WithTimestamp(e.Time))
		delete(t.waits, id)
	}
	attrs := []attribute.KeyValue{AttrTurnStatus.String(e.Status), AttrTurnStopReason.String(e.Code)}
	if s := e.Turn; s != nil {
		attrs = append(attrs,
			AttrTurnRounds.Int(s.Rounds),
			semconv.GenAIUsageInputTokens(int(s.Usage.InputTokens)),
			semconv.GenAIUsageOutputTokens(int(s.Usage.OutputTokens)))
		if s.Cost > 0 {
			attrs = append(attrs, AttrCost.Float64(s.Cost))
		}
	}
	t.span.SetAttributes(attrs...)
	if e.Status == "failed" {
		msg := e.Code
		if e.Turn != nil && e.Turn.Error != "" {
			msg = firstLine(e.Turn.Error, 200)
		}
		t.span.SetStatus(codes.Error, msg)
		t.span.SetAttributes(semconv.ErrorTypeKey.String(e.Code))
	}
	t.span.End(trace.WithTimestamp(e.Time))
}

// firstLine returns s's first line, cut to at most n bytes on a rune
// boundary: a span status is a summary, the content is in the history.
func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ProviderName maps a rein provider name to the gen_ai.provider.name of
// the conventions: the protocol variants of one vendor are one provider.
func ProviderName(p string) string {
	switch p {
	case "openai", "openai-chat":
		return "openai"
	}
	return p
}
