package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/transport"
)

// Provider is the name this adapter gives its errors and opaque payloads.
const Provider = "anthropic"

// DefaultBaseURL is Anthropic's API root, without the /v1 the adapter adds.
const DefaultBaseURL = "https://api.anthropic.com"

// minThinkingBudget is the smallest budget_tokens the API accepts.
const minThinkingBudget = 1024

// Options configure a [Model].
type Options struct {
	// APIKey is sent as "Authorization: Bearer KEY", as the SDK sends it
	// for this API version. Empty means $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL is the API root without /v1, as the SDK takes it. Empty means
	// $ANTHROPIC_BASE_URL, then [DefaultBaseURL].
	BaseURL string
	// Model is the model used when a request names none.
	Model string
	// HTTPClient sends the requests; nil means a client of package
	// llm/transport. Either way Timeouts' header and idle bounds apply.
	HTTPClient *http.Client
	// Timeouts bound the call's HTTP phases (llm/transport; zero values
	// are the defaults: 30 s to connect and for TLS, 5 min for the
	// headers and between two reads of the body).
	Timeouts transport.Timeouts
	// DisableStreaming makes each call one JSON request and response. The
	// events are the same as when streaming; they only arrive at once.
	DisableStreaming bool
	// ThinkingBudget enables extended thinking with this many tokens
	// (at least 1024); 0 leaves thinking off.
	ThinkingBudget int
	// MaxTokens is max_tokens when a request sets no MaxOutputTokens; 0
	// chooses a default for the model (the API requires the field).
	MaxTokens int
	// ParallelToolCalls, when set, decides disable_parallel_tool_use over
	// llm.Request.ParallelCalls: false asks for at most one call per
	// response.
	ParallelToolCalls *bool
	// PromptCache marks prompt-cache breakpoints on the system prompt and on
	// the last block of each of the last two messages, so each round of a
	// turn reads the prefix the round before wrote.
	PromptCache bool
	// TextTools drives the model in text tool mode (DESIGN §5.2), for
	// Anthropic-compatible servers without native tool use: tools are
	// described in the system prompt instead of sent as definitions, calls
	// are parsed from the text (DSML) and go back in that format, and
	// results go back as user-role text.
	TextTools bool
}

// Model is an [llm.Model] speaking the Anthropic Messages API.
type Model struct {
	opts     Options
	endpoint *endpoint
}

// New returns a model configured by opts. It checks the options but makes no
// request.
func New(opts Options) (*Model, error) {
	if opts.APIKey == "" {
		opts.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	// The adapter appends /v1/messages; a base URL that already ends in /v1
	// would produce /v1/v1/messages, the commonest configuration mistake.
	if strings.HasSuffix(strings.TrimRight(opts.BaseURL, "/"), "/v1") {
		return nil, fmt.Errorf("anthropic: base URL %q must not end in /v1", opts.BaseURL)
	}
	if opts.ThinkingBudget != 0 && opts.ThinkingBudget < minThinkingBudget {
		return nil, fmt.Errorf("anthropic: thinking budget %d is below the minimum of %d tokens", opts.ThinkingBudget, minThinkingBudget)
	}
	if opts.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: negative max tokens %d", opts.MaxTokens)
	}
	// Retries belong to llm.WithRetry, which knows whether anything of the
	// round was shown already; the endpoint sends each request once.
	return &Model{opts: opts, endpoint: newEndpoint(&opts)}, nil
}

// OutputMode implements llm.OutputModer: a structured answer is asked for
// as a forced tool call, which every Claude model with tools takes (the
// Messages API's own JSON output is in beta for some models only).
func (m *Model) OutputMode() llm.OutputMode { return llm.OutputTool }

// ReadsHistory implements llm.HistoryReader: the messages are built from
// the request's History and Items in turn.
func (m *Model) ReadsHistory() bool { return true }

// Stream sends one request. Errors before the response (a refused
// connection, an error status) are returned from Stream, streaming or not.
// A turn the API pauses (pause_turn) is continued within the stream
// (pause.go).
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	s, err := m.stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return &pausingStream{ctx: ctx, m: m, req: req, cur: s}, nil
}

// stream sends one request of a round.
func (m *Model) stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	stream := !m.opts.DisableStreaming
	body, err := m.body(req, stream)
	if err != nil {
		return nil, &llm.Error{Kind: llm.BadRequest, Provider: Provider, Message: err.Error(), Err: err}
	}
	resp, err := m.endpoint.post(ctx, body)
	if err != nil {
		return nil, err
	}
	if stream {
		return newSSEStream(ctx, resp, req.Tools), nil
	}
	msg, err := readMessage(ctx, resp)
	if err != nil {
		return nil, err
	}
	s := &jsonStream{}
	s.asm.init(req.Tools)
	if err := s.asm.message(msg); err != nil {
		return nil, err
	}
	return s, nil
}

// readMessage reads a non-streamed response as the SDK's Messages.New read
// it: a JSON body (by its content type) decoded into sdk.Message; anything
// else is a broken response.
func readMessage(ctx context.Context, resp *http.Response) (*sdk.Message, error) {
	raw, err := transport.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, mapError(ctx, fmt.Errorf("error reading response body: %w", err), false)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if !strings.Contains(mt, "application/json") && !strings.HasSuffix(mt, "+json") {
		return nil, mapError(ctx, fmt.Errorf("response of content type %q, not JSON", ct), false)
	}
	msg := new(sdk.Message)
	// A decoder, as the SDK used: it reads the first JSON value and
	// ignores what trails it.
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(msg); err != nil {
		return nil, mapError(ctx, fmt.Errorf("error parsing response json: %w", err), false)
	}
	return msg, nil
}

// jsonStream replays the events of a complete non-streamed response.
type jsonStream struct {
	asm assembler
}

func (s *jsonStream) Recv() (llm.Event, error) {
	if ev, ok := s.asm.next(); ok {
		return ev, nil
	}
	return llm.Event{}, io.EOF
}

func (s *jsonStream) Close() error { return nil }
