package anthropic

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reinhq/rein/llm"
)

// Provider is the name this adapter gives its errors and opaque payloads.
const Provider = "anthropic"

// DefaultBaseURL is Anthropic's API root, without the /v1 the SDK adds.
const DefaultBaseURL = "https://api.anthropic.com"

// minThinkingBudget is the smallest budget_tokens the API accepts.
const minThinkingBudget = 1024

// Options configure a [Model].
type Options struct {
	// APIKey is sent as x-api-key. Empty means $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL is the API root without /v1, as the SDK uses it. Empty means
	// $ANTHROPIC_BASE_URL, then [DefaultBaseURL].
	BaseURL string
	// Model is the model used when a request names none.
	Model string
	// HTTPClient sends the requests; nil means a client without a timeout,
	// since a model call is bounded by its context.
	HTTPClient *http.Client
	// DisableStreaming makes each call one JSON request and response. The
	// events are the same as when streaming; they only arrive at once.
	DisableStreaming bool
	// ThinkingBudget enables extended thinking with this many tokens
	// (at least 1024); 0 leaves thinking off.
	ThinkingBudget int
	// MaxTokens is max_tokens when a request sets no MaxOutputTokens; 0
	// chooses a default for the model (the API requires the field).
	MaxTokens int
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
	client sdk.Client
	opts   Options
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
	// The SDK appends "v1/messages"; a base URL that already ends in /v1
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
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	client := sdk.NewClient(
		// rein resolves its own configuration; the SDK's defaults would
		// also read credential profiles from disk.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(opts.APIKey),
		option.WithBaseURL(opts.BaseURL),
		option.WithHTTPClient(hc),
		// Retries belong to llm.WithRetry, which knows whether anything of
		// the round was shown already.
		option.WithMaxRetries(0),
	)
	return &Model{client: client, opts: opts}, nil
}

// Stream sends one request. Errors before the response are returned from
// the first Recv when streaming and from Stream otherwise.
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	params, reqOpts, err := m.params(req)
	if err != nil {
		return nil, &llm.Error{Kind: llm.BadRequest, Provider: Provider, Message: err.Error(), Err: err}
	}
	if !m.opts.DisableStreaming {
		s := m.client.Messages.NewStreaming(ctx, params, reqOpts...)
		return newSSEStream(ctx, s, req.Tools), nil
	}
	// The SDK refuses non-streaming calls whose max_tokens suggests more
	// than ten minutes of generation unless a timeout is given; the
	// caller's context is the real bound, so give it a generous one.
	reqOpts = append(reqOpts, option.WithRequestTimeout(time.Hour))
	msg, err := m.client.Messages.New(ctx, params, reqOpts...)
	if err != nil {
		return nil, mapError(ctx, err, false)
	}
	s := &jsonStream{}
	s.asm.init(req.Tools)
	if err := s.asm.message(msg); err != nil {
		return nil, err
	}
	return s, nil
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
