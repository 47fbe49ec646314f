package protocol

import (
	"encoding/json"
	"time"

	"github.com/reinhq/rein/event"
)

// ProtocolVersion is the version of the protocol this package speaks; it
// changes when a method or a field changes incompatibly.
const ProtocolVersion = "1"

// Methods a client calls (DESIGN §9).
const (
	MethodInitialize     = "initialize"
	MethodThreadStart    = "thread/start"
	MethodThreadResume   = "thread/resume"
	MethodThreadList     = "thread/list"
	MethodThreadRead     = "thread/read"
	MethodTurnStart      = "turn/start"
	MethodTurnSteer      = "turn/steer"
	MethodTurnInterrupt  = "turn/interrupt"
	MethodThreadCompact  = "thread/compact"
	MethodPauseAnswer    = "pause/answer"
	MethodApprovalAnswer = "approval/answer"
	MethodTurnTrace      = "turn/trace"
)

// Notifications the server sends (DESIGN §9).
const (
	NotifyTurnStarted       = "turn/started"
	NotifyTurnCompleted     = "turn/completed"
	NotifyItemStarted       = "item/started"
	NotifyItemDelta         = "item/delta"
	NotifyItemCompleted     = "item/completed"
	NotifyPauseRequested    = "pause/requested"
	NotifyApprovalRequested = "approval/requested"
	NotifyUsageUpdated      = "usage/updated"
	NotifyContextUpdated    = "context/updated"
	NotifyWarning           = "warning"
	NotifySubagent          = "subagent/event"
)

// ClientInfo names the client.
type ClientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// ServerInfo names the server.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams are the params of initialize, the first request of a
// connection.
type InitializeParams struct {
	ClientInfo ClientInfo `json:"clientInfo"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ServerInfo      ServerInfo `json:"serverInfo"`
	ProtocolVersion string     `json:"protocolVersion"`
	// Defaults are what a thread/start that names nothing gets, and the
	// models the server knows, so a client can offer them.
	Defaults *ThreadDefaults `json:"defaults,omitempty"`
}

// ThreadDefaults are the server's settings of threads that name none.
type ThreadDefaults struct {
	Model     string   `json:"model,omitempty" jsonschema:"PROVIDER:MODEL; left out when it is a scripted model (a file)"`
	Workspace string   `json:"workspace,omitempty"`
	Approval  string   `json:"approval,omitempty"`
	Sandbox   string   `json:"sandbox,omitempty" jsonschema:"also the loosest mode a thread may ask for"`
	Models    []string `json:"models,omitempty" jsonschema:"PROVIDER:MODEL specs the config file names, for thread/start's model"`
	// KnowledgeBases are the bases a thread/start may attach.
	KnowledgeBases []string `json:"knowledgeBases,omitempty" jsonschema:"the knowledge bases the server knows, for thread/start's knowledgeBases"`
}

// ThreadStartParams are the params of thread/start. Empty fields take the
// server's defaults.
type ThreadStartParams struct {
	Workspace    string   `json:"workspace,omitempty" jsonschema:"the directory the file tools may use"`
	Model        string   `json:"model,omitempty" jsonschema:"PROVIDER:MODEL of a provider the server knows, such as openai:gpt-5 or anthropic:claude-sonnet-4-5; never scripted:PATH (a file), which only the server's own --model may name"`
	Instructions string   `json:"instructions,omitempty" jsonschema:"the system prompt"`
	EnableTools  []string `json:"enableTools,omitempty" jsonschema:"tools to add to the default set"`
	DisableTools []string `json:"disableTools,omitempty" jsonschema:"tools to remove from the set"`
	ForceTools   []string `json:"forceTools,omitempty" jsonschema:"tools to mount whatever their gates say (exec and code_execution still need a sandbox or approval; disableTools and the sandbox mode still win)"`
	Approval     string   `json:"approval,omitempty" jsonschema:"never, on-request or untrusted"`
	Sandbox      string   `json:"sandbox,omitempty" jsonschema:"read-only, workspace-write or full-access"`
	MaxRounds    int      `json:"maxRounds,omitempty" jsonschema:"the exploration budget in rounds"`
	// Output is the thread's default output schema (see TurnStartParams).
	Output json.RawMessage `json:"output,omitempty" jsonschema:"a JSON Schema (an object schema, at most 64 KiB) the answers of the thread's turns must match, unless a turn/start sends its own output"`
	// KnowledgeBases are the knowledge bases the thread's turns attach
	// besides the server's own (rein serve --kb).
	KnowledgeBases []string `json:"knowledgeBases,omitempty" jsonschema:"knowledge bases the thread's turns attach (rag, kb_files and the first message's seed), each one initialize lists in defaults.knowledgeBases; at most 16"`
}

// ThreadResult is the result of thread/start and thread/resume.
type ThreadResult struct {
	Thread Thread `json:"thread"`
}

// ThreadResumeParams are the params of thread/resume.
type ThreadResumeParams struct {
	ThreadID string `json:"threadId"`
}

// ThreadListParams are the params of thread/list.
type ThreadListParams struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many threads (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
	// IncludeChildren lists sub-agents' threads too; by default only the
	// threads users started are listed.
	IncludeChildren bool `json:"includeChildren,omitempty" jsonschema:"list sub-agents' threads too (default: only the threads users started)"`
	// Query keeps the threads whose title (the first user message,
	// shortened) contains it, case-insensitively.
	Query string `json:"query,omitempty" jsonschema:"only threads whose title contains this text, case-insensitively (at most 320 bytes)"`
}

// ThreadListResult is the result of thread/list, most recently updated
// first.
type ThreadListResult struct {
	Threads    []Thread `json:"threads"`
	NextCursor string   `json:"nextCursor" jsonschema:"the cursor of the next page; empty on the last page"`
}

// ThreadReadParams are the params of thread/read.
type ThreadReadParams struct {
	ThreadID string `json:"threadId"`
}

// ThreadReadResult is the result of thread/read: the thread, its turns and
// its items in history order.
type ThreadReadResult struct {
	Thread Thread `json:"thread"`
	Turns  []Turn `json:"turns"`
	Items  []Item `json:"items"`
	// Children are the threads of the sub-agents that the thread's turns
	// ran (the task tool), oldest first, each with its parent link; read
	// one with thread/read of its id.
	Children []Thread `json:"children,omitempty" jsonschema:"the threads of the sub-agents this thread's turns ran; read each with thread/read"`
	// Context is the context budget of the thread's latest request that
	// this server saw (the last context/updated); absent when it saw none
	// since it started.
	Context *event.ContextReport `json:"context,omitempty" jsonschema:"the latest context/updated of the thread this server saw; absent when none since it started"`
}

// InputPart is one part of a user's input.
type InputPart struct {
	Type string `json:"type" jsonschema:"text, or file: an attached text file"`
	Text string `json:"text"`
	// Name is an attached file's name (type file).
	Name string `json:"name,omitempty" jsonschema:"the attached file's name (type file)"`
}

// TurnStartParams are the params of turn/start.
type TurnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []InputPart `json:"input"`
	// Output asks the turn for a structured answer (see OutputSchema).
	Output json.RawMessage `json:"output,omitempty" jsonschema:"a JSON Schema (an object schema, at most 64 KiB) the turn's answer must match: the answer is checked, gets one repair round when wrong, and comes back decoded as the turn's output; its title names it, its description tells the model what it is"`
}

// TurnStartResult is the result of turn/start: the turn runs (inProgress)
// or waits for the running one (queued).
type TurnStartResult struct {
	Turn Turn `json:"turn"`
}

// TurnSteerParams are the params of turn/steer.
type TurnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId" jsonschema:"the turn the input is meant for; a different active turn is an error"`
	Input          []InputPart `json:"input"`
}

// TurnSteerResult is the result of turn/steer: the input is persisted as
// item itemId of turn turnId.
type TurnSteerResult struct {
	TurnID string `json:"turnId"`
	ItemID string `json:"itemId"`
}

// ThreadCompactParams are the params of thread/compact: compact the
// thread's context now (a handoff summary replaces the older history in
// what later requests send; the store keeps everything).
type ThreadCompactParams struct {
	ThreadID string `json:"threadId"`
}

// TurnInterruptParams are the params of turn/interrupt.
type TurnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// EmptyResult is the result of methods that return nothing.
type EmptyResult struct{}

// PauseAnswerParams are the params of pause/answer: answers by question, or
// one text for all questions.
type PauseAnswerParams struct {
	ThreadID string           `json:"threadId"`
	TurnID   string           `json:"turnId"`
	CallID   string           `json:"callId"`
	Answers  []QuestionAnswer `json:"answers,omitempty"`
	Text     string           `json:"text,omitempty"`
}

// QuestionAnswer answers one question of a pause.
type QuestionAnswer struct {
	QuestionID string `json:"questionId"`
	Text       string `json:"text"`
}

// Decision answers an approval.
type Decision string

// Approval decisions.
const (
	DecisionApprove       Decision = "approve"
	DecisionApproveThread Decision = "approveThread"
	DecisionDeny          Decision = "deny"
)

// ApprovalAnswerParams are the params of approval/answer.
type ApprovalAnswerParams struct {
	ThreadID string   `json:"threadId"`
	TurnID   string   `json:"turnId"`
	CallID   string   `json:"callId"`
	Decision Decision `json:"decision" jsonschema:"approve, approveThread (this tool for the rest of the thread) or deny"`
	Text     string   `json:"text,omitempty" jsonschema:"a reason, passed to the model with a denial"`
}

// Thread is a thread on the wire.
type Thread struct {
	ID string `json:"id"`
	// Title is the thread's first user message, shortened; TurnCount
	// counts its turns. Both are set where the store keeps them.
	Title        string   `json:"title,omitempty"`
	TurnCount    int      `json:"turnCount,omitempty"`
	Workspace    string   `json:"workspace,omitempty"`
	Model        string   `json:"model,omitempty"`
	Instructions string   `json:"instructions,omitempty"`
	EnableTools  []string `json:"enableTools,omitempty"`
	DisableTools []string `json:"disableTools,omitempty"`
	ForceTools   []string `json:"forceTools,omitempty"`
	Approval     string   `json:"approval,omitempty"`
	Sandbox      string   `json:"sandbox,omitempty"`
	MaxRounds    int      `json:"maxRounds,omitempty"`
	Approved     []string `json:"approved,omitempty" jsonschema:"tools approved for the whole thread"`
	// KnowledgeBases are the bases the thread attaches (thread/start's).
	KnowledgeBases []string  `json:"knowledgeBases,omitempty" jsonschema:"the knowledge bases the thread attaches, as thread/start set them"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Parent is set on a sub-agent's thread: the parent thread's turn and
	// call that ran it.
	Parent *ThreadLink `json:"parent,omitempty" jsonschema:"on a sub-agent's thread: the parent thread, turn and task call that ran it"`
	// Output is the thread's default output schema, as thread/start set it.
	Output json.RawMessage `json:"output,omitempty" jsonschema:"the output schema the thread's turns answer in, unless a turn sends its own"`
	// Owner is the named token that created the thread (rein serve
	// --token-file); absent when none did.
	Owner string `json:"owner,omitempty" jsonschema:"the name of the named token that created the thread; absent when none did"`
}

// ThreadLink names the call of a parent thread's turn that ran a
// sub-agent's thread.
type ThreadLink struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	CallID   string `json:"callId"`
}

// Turn is a turn on the wire.
type Turn struct {
	ID               string  `json:"id"`
	ThreadID         string  `json:"threadId"`
	Status           string  `json:"status" jsonschema:"queued, inProgress, paused, completed, interrupted or failed"`
	StopReason       string  `json:"stopReason,omitempty"`
	Answer           string  `json:"answer,omitempty"`
	Rounds           int     `json:"rounds"`
	SettlementRounds int     `json:"settlementRounds"`
	ToolSteps        int     `json:"toolSteps"`
	Usage            Usage   `json:"usage"`
	Cost             float64 `json:"cost,omitempty"`
	Error            string  `json:"error,omitempty"`
	// Pause is what a paused turn waits for, so that a client that
	// connects after pause/requested or approval/requested (a reload)
	// can still answer it. Set by thread/read.
	Pause *TurnPause `json:"pause,omitempty"`
	// Output is the structured answer of a turn started with an output
	// schema: the JSON object, validated against it.
	Output json.RawMessage `json:"output,omitempty" jsonschema:"the structured answer of a turn started with an output schema: the JSON object, checked against the schema"`
}

// Pause kinds of TurnPause.
const (
	PauseKindQuestion = "question"
	PauseKindApproval = "approval"
)

// TurnPause is what a paused turn waits for: pause/requested's questions
// (kind question) or approval/requested's call (kind approval).
type TurnPause struct {
	Kind      string     `json:"kind" jsonschema:"question (answer with pause/answer) or approval (answer with approval/answer)"`
	CallID    string     `json:"callId"`
	Tool      string     `json:"tool"`
	Intro     string     `json:"intro,omitempty"`
	Questions []Question `json:"questions,omitempty"`
	Arguments string     `json:"arguments,omitempty" jsonschema:"the arguments of the call awaiting approval"`
	// Reason says why the call's arguments need approval where its tool
	// alone would not (a write every workspace's prompt carries); an
	// approval of the tool for the thread does not cover such a call.
	Reason string `json:"reason,omitempty" jsonschema:"why these arguments need approval (approvals only); approveThread does not cover such a call"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoningTokens,omitempty"`
}

// Item types.
const (
	ItemUserMessage  = "userMessage"
	ItemAgentMessage = "agentMessage"
	ItemToolResult   = "toolResult"
)

// Item is one entry of a thread's history on the wire.
type Item struct {
	ID string `json:"id"`
	// StreamID is the id item/started and item/delta used while the item
	// was produced, when it differs from ID.
	StreamID string `json:"streamId,omitempty"`
	TurnID   string `json:"turnId,omitempty"`
	Type     string `json:"type" jsonschema:"userMessage, agentMessage or toolResult"`
	Origin   string `json:"origin,omitempty" jsonschema:"of a userMessage: empty for input, steer, directive (added by the engine) or marker"`
	Status   string `json:"status" jsonschema:"inProgress or completed"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	Calls    []Call `json:"calls,omitempty"`
	// Result is a toolResult's result; while the tool runs it names the
	// call only.
	Result *Result `json:"result,omitempty"`
}

// Call is a tool call of an agentMessage.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Result answers a call.
type Result struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	Content string `json:"content,omitempty"`
	Status  string `json:"status,omitempty" jsonschema:"ok, error, aborted, not_run, duplicate or pending"`
	// Arguments are the call's arguments while the tool runs.
	Arguments string `json:"arguments,omitempty"`
}

// TurnNotification is the params of turn/started and turn/completed.
type TurnNotification struct {
	ThreadID string `json:"threadId"`
	Turn     Turn   `json:"turn"`
}

// ItemNotification is the params of item/started and item/completed.
type ItemNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     Item   `json:"item"`
}

// DeltaKind says what an item/delta adds to.
type DeltaKind string

// Delta kinds.
const (
	DeltaText      DeltaKind = "text"
	DeltaThinking  DeltaKind = "thinking"
	DeltaArguments DeltaKind = "arguments"
)

// ItemDelta is the params of item/delta.
type ItemDelta struct {
	ThreadID string    `json:"threadId"`
	TurnID   string    `json:"turnId"`
	ItemID   string    `json:"itemId"`
	Kind     DeltaKind `json:"kind" jsonschema:"text, thinking or arguments"`
	Delta    string    `json:"delta"`
	// CallID names the call an arguments delta belongs to.
	CallID string `json:"callId,omitempty"`
}

// Question is one question of a pause.
type Question struct {
	ID            string   `json:"id"`
	Prompt        string   `json:"prompt"`
	Header        string   `json:"header,omitempty"`
	Options       []Option `json:"options,omitempty"`
	MultiSelect   bool     `json:"multiSelect,omitempty"`
	AllowFreeText bool     `json:"allowFreeText,omitempty"`
}

// Option is one choice of a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// PauseRequested is the params of pause/requested: the turn waits for
// pause/answer.
type PauseRequested struct {
	ThreadID  string     `json:"threadId"`
	TurnID    string     `json:"turnId"`
	CallID    string     `json:"callId"`
	Tool      string     `json:"tool"`
	Intro     string     `json:"intro,omitempty"`
	Questions []Question `json:"questions"`
}

// ApprovalRequested is the params of approval/requested: the turn waits for
// approval/answer.
type ApprovalRequested struct {
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Reason is TurnPause.Reason: why these arguments need approval.
	Reason string `json:"reason,omitempty"`
}

// UsageUpdated is the params of usage/updated, sent after each round.
type UsageUpdated struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Round    int    `json:"round"`
	// Usage is the round's.
	Usage Usage `json:"usage"`
	// Cost is the turn's so far, when the model has a price.
	Cost float64 `json:"cost,omitempty"`
}

// ContextUpdated is the params of context/updated: the context budget of
// the latest request (DESIGN §8).
type ContextUpdated struct {
	ThreadID string               `json:"threadId"`
	TurnID   string               `json:"turnId"`
	Context  *event.ContextReport `json:"context"`
}

// TurnTraceParams are the params of turn/trace.
type TurnTraceParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// TurnTraceResult is the result of turn/trace: the turn's trace as the
// self-contained page rein trace writes (a timeline of its rounds and
// tool calls; styles and one script inline, nothing fetched).
type TurnTraceResult struct {
	HTML string `json:"html"`
}

// SubagentEvent is the params of subagent/event: what a sub-agent (a
// child turn run by the task tool) did, under the parent's call that runs
// it. Its pauses reach the client as the parent's own pause/requested or
// approval/requested.
type SubagentEvent struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	// CallID is the parent's task call; Depth the child's depth (1 for a
	// child of the turn the client started).
	CallID string `json:"callId"`
	Depth  int    `json:"depth"`
	// ChildThreadID and ChildTurnID name the child's own thread and turn.
	ChildThreadID string `json:"childThreadId"`
	ChildTurnID   string `json:"childTurnId"`
	// Type is the child's event: turn_started, tool_started, result,
	// warning or turn_completed.
	Type string `json:"type"`
	// Name is the tool of tool_started and result.
	Name string `json:"name,omitempty"`
	// Status is a result's status, or the child turn's at its end.
	Status string `json:"status,omitempty"`
	// Content is a result's text or a warning's message, cut to 2000
	// characters; the child's answer at turn_completed.
	Content string `json:"content,omitempty"`
	// Usage and Cost are the child turn's at turn_completed.
	Usage *Usage  `json:"usage,omitempty"`
	Cost  float64 `json:"cost,omitempty"`
}

// Warning is the params of warning.
type Warning struct {
	ThreadID string `json:"threadId,omitempty"`
	TurnID   string `json:"turnId,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	// Dropped is how many notifications were lost (code
	// notifications_dropped).
	Dropped int64 `json:"dropped,omitempty"`
}

// Warning codes the server itself sends; the others are the engine's
// (settlement, forced, truncated, retry, …).
const (
	WarnNotificationsDropped = "notifications_dropped"
)
