package window

import (
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts the tokens of a text.
type Counter interface {
	// Count returns the number of tokens text takes.
	Count(text string) int
	// Name names the encoding, such as "o200k_base".
	Name() string
}

// Encodings a Counter may use.
const (
	O200k  = "o200k_base"
	Cl100k = "cl100k_base"
	// Heuristic is the fallback when no tokenizer loads: a token per four
	// bytes, rounded up.
	Heuristic = "bytes/4"
)

// CounterFor returns the counter for a model and whether it is the model's
// own tokenizer. OpenAI's current families (gpt-4o, gpt-4.1, gpt-5, the o
// series) use o200k_base and older GPT-4 and 3.5 cl100k_base; other vendors'
// tokenizers are not public, so their counts are cl100k_base estimates.
func CounterFor(model string) (c Counter, exact bool) {
	enc, exact := encodingFor(model)
	return Encoding(enc), exact
}

func encodingFor(model string) (string, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		// A router's vendor prefix: "openai/gpt-5".
		m = m[i+1:]
	}
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"} {
		if m == p || strings.HasPrefix(m, p+"-") || strings.HasPrefix(m, p+".") {
			return O200k, true
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5"} {
		if m == p || strings.HasPrefix(m, p+"-") {
			return Cl100k, true
		}
	}
	return Cl100k, false
}

// Encoding returns a counter for a tiktoken encoding (O200k or Cl100k). The
// tokenizer loads from data built into the binary on first use; if it
// cannot, the counter falls back to the byte heuristic and says so in Name.
func Encoding(name string) Counter {
	if name == Heuristic {
		return heuristic{}
	}
	v, ok := encodings.Load(name)
	if !ok {
		v, _ = encodings.LoadOrStore(name, &loaded{})
	}
	return &bpe{name: name, l: v.(*loaded)}
}

// bpe counts with a tiktoken encoding, loaded once per process.
type bpe struct {
	name string
	l    *loaded
}

var encodings sync.Map // name -> *loaded

type loaded struct {
	once sync.Once
	tk   *tiktoken.Tiktoken
}

var setLoader sync.Once

func (b *bpe) enc() *tiktoken.Tiktoken {
	l := b.l
	l.once.Do(func() {
		// The default loader downloads the encoding files; the offline
		// loader reads the copies compiled into the binary, so counting
		// works without a network.
		setLoader.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
		tk, err := tiktoken.GetEncoding(b.name)
		if err == nil {
			l.tk = tk
		}
	})
	return l.tk
}

func (b *bpe) Count(text string) int {
	if text == "" {
		return 0
	}
	tk := b.enc()
	if tk == nil {
		return heuristic{}.Count(text)
	}
	return len(tk.EncodeOrdinary(text))
}

func (b *bpe) Name() string {
	if b.enc() == nil {
		return Heuristic
	}
	return b.name
}

// heuristic counts a token per four bytes.
type heuristic struct{}

func (heuristic) Count(text string) int { return (len(text) + 3) / 4 }
func (heuristic) Name() string          { return Heuristic }
