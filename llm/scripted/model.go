package scripted

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
)

// provider is the name scripted errors carry in [llm.Error.Provider].
const provider = "scripted"

// Model is an [llm.Model] that replays a [Script]. Each Stream call consumes
// the next round. See the package documentation for concurrent use.
type Model struct {
	checkHistory bool
	record       bool

	mu       sync.Mutex
	plans    []plan
	total    int   // rounds in all, repeats counted
	cur, rep int   // the next round: plans[cur], its rep-th use
	served   int   // requests received, the exhausted ones included
	invalid  error // why the script could not be compiled
	failures []error
	requests []llm.Request
}

// Option configures a [Model].
type Option func(*Model)

// NoHistoryCheck turns off the check of every request's history with
// [llm.CheckHistory]. Benchmarks use it: the check walks the whole history.
func NoHistoryCheck() Option {
	return func(m *Model) { m.checkHistory = false }
}

// RecordRequests makes the model keep a copy of every request it receives,
// for [Model.Requests].
func RecordRequests() Option {
	return func(m *Model) { m.record = true }
}

// New returns a model replaying s. An invalid script does not panic: every
// Stream call and [Model.Verify] return the reason. Use [Parse] or [Load] to
// learn it up front.
func New(s Script, opts ...Option) *Model {
	m := &Model{checkHistory: true}
	for _, o := range opts {
		o(m)
	}
	plans, err := compile(s)
	if err != nil {
		m.invalid = &llm.Error{Kind: llm.BadRequest, Provider: provider, Message: "invalid script: " + err.Error(), Err: err}
		return m
	}
	m.plans = plans
	for i := range plans {
		m.total += plans[i].repeat
	}
	return m
}

// ReadsHistory implements llm.HistoryReader: expectations and the
// history check read the request's History and Items in turn.
func (m *Model) ReadsHistory() bool { return true }

// A script is checked after a one-shot turn (session.Config.Verify).
var _ llm.Verifier = (*Model)(nil)

// Stream consumes the next round and returns its stream. A request that
// fails an expectation or the history check, or comes after the last round,
// gets an [*llm.Error] of kind [llm.BadRequest] naming the round; the failure
// is also kept for [Model.Verify]. A request whose ctx is already done
// consumes nothing.
func (m *Model) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		req = &llm.Request{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.invalid != nil {
		return nil, m.invalid
	}
	if m.record {
		m.requests = append(m.requests, copyRequest(req))
	}
	m.served++
	n := m.served
	if m.cur >= len(m.plans) {
		return nil, m.fail(fmt.Sprintf("request %d: script exhausted after %d rounds", n, m.total))
	}
	p, rep := &m.plans[m.cur], m.rep
	if m.rep++; m.rep >= p.repeat {
		m.cur, m.rep = m.cur+1, 0
	}

	var problems []string
	if m.checkHistory {
		if err := llm.CheckRequest(req); err != nil {
			problems = append(problems, "history breaks the invariants: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	for i := range p.expect {
		problems = p.expect[i].check(req, problems)
	}
	if problems != nil {
		return nil, m.fail(where(n, p, rep) + ": " + strings.Join(problems, "; "))
	}
	return newStream(ctx, p, n, rep), nil
}

// fail records a failure and returns it. m.mu is held.
func (m *Model) fail(msg string) error {
	err := &llm.Error{Kind: llm.BadRequest, Provider: provider, Message: msg}
	m.failures = append(m.failures, err)
	return err
}

// where names the n-th request and, when it differs or is worth knowing,
// the script round serving it.
func where(n int, p *plan, rep int) string {
	var details []string
	if n != p.index+1 {
		details = append(details, "script round "+strconv.Itoa(p.index+1))
	}
	if p.line > 0 {
		details = append(details, "line "+strconv.Itoa(p.line))
	}
	if p.repeat > 1 {
		details = append(details, fmt.Sprintf("repeat %d of %d", rep+1, p.repeat))
	}
	if details == nil {
		return "round " + strconv.Itoa(n)
	}
	return "round " + strconv.Itoa(n) + " (" + strings.Join(details, ", ") + ")"
}

// setCallIDs sets the ids of the calls of the rep-th use of a round serving
// request n: the script's id, with "_<rep+1>" on repeats, or call_<n>_<i>.
// The ids made here share one allocation, as a round should cost the engine
// next to nothing.
func setCallIDs(dst []llm.Call, calls []callPlan, n, rep int) {
	total := 0
	for j := range calls {
		total += madeIDLen(&calls[j], n, j, rep)
	}
	var made string
	if total > 0 {
		var sb strings.Builder
		sb.Grow(total)
		var num [20]byte
		for j := range calls {
			switch c := &calls[j]; {
			case c.id == "":
				sb.WriteString("call_")
				sb.Write(strconv.AppendInt(num[:0], int64(n), 10))
				sb.WriteByte('_')
				sb.Write(strconv.AppendInt(num[:0], int64(j+1), 10))
			case rep > 0:
				sb.WriteString(c.id)
				sb.WriteByte('_')
				sb.Write(strconv.AppendInt(num[:0], int64(rep+1), 10))
			}
		}
		made = sb.String()
	}
	off := 0
	for j := range calls {
		c := &calls[j]
		if l := madeIDLen(c, n, j, rep); l > 0 {
			dst[j].ID, off = made[off:off+l], off+l
		} else {
			dst[j].ID = c.id
		}
	}
}

// madeIDLen returns the length of the id setCallIDs makes for call j, or 0
// when the script's id is used as is.
func madeIDLen(c *callPlan, n, j, rep int) int {
	switch {
	case c.id == "":
		return len("call_") + decimalLen(n) + 1 + decimalLen(j+1)
	case rep > 0:
		return len(c.id) + 1 + decimalLen(rep+1)
	}
	return 0
}

func decimalLen(x int) int {
	n := 1
	for x >= 10 {
		x /= 10
		n++
	}
	return n
}

// copyRequest copies a request for Requests: everything it sends is in the
// copy's Items (History's items first), so a test reads one slice.
func copyRequest(req *llm.Request) llm.Request {
	c := *req
	// The engine shares its slices and appends to Items later.
	c.Items = append(make([]llm.Item, 0, req.Len()), req.History...)
	c.Items = append(c.Items, req.Items...)
	c.History = nil
	c.Tools = slices.Clone(req.Tools)
	return c
}

// Remaining returns the number of rounds not yet consumed, repeats counted.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remaining()
}

func (m *Model) remaining() int {
	n := 0
	for i := m.cur; i < len(m.plans); i++ {
		n += m.plans[i].repeat
	}
	return n - m.rep
}

// Verify reports what went wrong so far: an invalid script, rounds left
// unconsumed, and every failed expectation, history violation and request
// past the end of the script, joined. It returns nil when the script was
// played to its end and everything held.
func (m *Model) Verify() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.invalid != nil {
		return m.invalid
	}
	var errs []error
	if left := m.remaining(); left > 0 {
		p := &m.plans[m.cur]
		next := roundName(p.index, p.line)
		if p.repeat > 1 {
			next += fmt.Sprintf(", repeat %d of %d", m.rep+1, p.repeat)
		}
		errs = append(errs, fmt.Errorf("scripted: %d of %d rounds not used; the next is %s", left, m.total, next))
	}
	errs = append(errs, m.failures...)
	return errors.Join(errs...)
}

// Requests returns copies of the requests received, in order, when the
// model was made with [RecordRequests]. A copy holds everything its
// request sent in Items; its History is empty.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}
