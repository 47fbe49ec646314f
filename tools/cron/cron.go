// Package cron is scheduled messages (DESIGN §7.3): the cron tool lets the
// model schedule a message into its thread (once at a time, every N
// seconds, or on a cron expression), list and cancel them; jobs are kept in
// the store. A Scheduler, run by `rein serve`, starts a turn with each
// message when it falls due, and runs once what fell due while no
// scheduler was running, reporting it.
package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Name is the tool's name.
const Name = "cron"

// Limits of the tool.
const (
	// MaxJobs is how many active jobs one thread may have.
	MaxJobs = 50
	// MaxMessage bounds a scheduled message, in characters.
	MaxMessage = 4000
)

// Store keeps the jobs; *store.Store is one.
type Store interface {
	AddJob(ctx context.Context, j store.Job) (store.Job, error)
	Jobs(ctx context.Context, thread string, all bool) ([]store.Job, error)
	CancelJob(ctx context.Context, thread, id string) error
}

// Options configure the tool. The zero value is the default.
type Options struct {
	// Now returns the current time (tests); default time.Now.
	Now func() time.Time
	// Scheduled is called after a job is added, so a scheduler in the same
	// process can look at it at once (Scheduler.Wake).
	Scheduled func()
}

type input struct {
	Action         string `json:"action" jsonschema:"schedule a message, list this conversation's jobs, or cancel one"`
	Message        string `json:"message,omitempty" jsonschema:"schedule: the message to send into this conversation when the job runs, written as the user's request"`
	Name           string `json:"name,omitempty" jsonschema:"schedule: a short name for the job"`
	At             string `json:"at,omitempty" jsonschema:"schedule once: an ISO 8601 time, e.g. 2025-06-01T09:00:00+02:00 (without an offset, read in tz)"`
	EverySeconds   int    `json:"every_seconds,omitempty" jsonschema:"schedule repeating: the interval in seconds, at least 30"`
	CronExpr       string `json:"cron_expr,omitempty" jsonschema:"schedule on a cron expression: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5"`
	TZ             string `json:"tz,omitempty" jsonschema:"the IANA time zone of at and cron_expr, e.g. Europe/Paris (default: the server's)"`
	DeleteAfterRun bool   `json:"delete_after_run,omitempty" jsonschema:"end a repeating job after its first run"`
	JobID          string `json:"job_id,omitempty" jsonschema:"cancel: the job's id"`
}

// tool is the cron tool. It is not a tool.New tool because it needs the
// call's thread: jobs belong to the conversation that scheduled them.
type cronTool struct {
	spec tool.Spec
	st   Store
	o    Options
}

// New returns the cron tool over st.
func New(st Store, o Options) tool.Tool {
	if o.Now == nil {
		o.Now = time.Now
	}
	t := tool.New(Name,
		"Schedule a message into this conversation for later — once (at), repeating (every_seconds ≥ 30) or on a cron expression — "+
			"or list or cancel this conversation's scheduled jobs. Jobs run while the rein server runs; runs missed while it was down run once when it starts.",
		func(context.Context, input) (tool.Output, error) { return tool.Output{}, nil },
		tool.WithAccess(tool.Mutating))
	return &cronTool{spec: t.Spec(), st: st, o: o}
}

func (c *cronTool) Spec() tool.Spec { return c.spec }

// Keys implements tool.Keyer: calls of one thread's jobs run in order;
// listing only reads.
func (c *cronTool) Keys(args json.RawMessage) tool.Keys {
	var in input
	if json.Unmarshal(args, &in) == nil && in.Action == "list" {
		return tool.Keys{Reads: []string{"cron"}}
	}
	return tool.Keys{Writes: []string{"cron"}}
}

func (c *cronTool) Run(ctx context.Context, call tool.Call) (tool.Output, error) {
	var in input
	dec := json.NewDecoder(bytes.NewReader(call.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return failed("invalid arguments for cron: " + err.Error())
	}
	if call.ThreadID == "" {
		return failed("this conversation is not kept in a thread, so nothing can be scheduled into it")
	}
	switch in.Action {
	case "schedule":
		return c.schedule(ctx, call.ThreadID, in)
	case "list":
		return c.list(ctx, call.ThreadID)
	case "cancel":
		if in.JobID == "" {
			return failed(`action "cancel" needs job_id; action "list" shows the jobs`)
		}
		err := c.st.CancelJob(ctx, call.ThreadID, in.JobID)
		if errors.Is(err, store.ErrNotFound) {
			return failed(fmt.Sprintf("no active job %q in this conversation; action \"list\" shows them", in.JobID))
		}
		if err != nil {
			return tool.Output{}, err
		}
		return tool.Textf("cancelled %s", in.JobID), nil
	default:
		return failed(fmt.Sprintf(`action %q: use "schedule", "list" or "cancel"`, in.Action))
	}
}

func (c *cronTool) schedule(ctx context.Context, thread string, in input) (tool.Output, error) {
	msg := strings.TrimSpace(in.Message)
	switch {
	case msg == "":
		return failed("message is empty; write what should be sent into this conversation when the job runs")
	case utf8.RuneCountInString(msg) > MaxMessage:
		return failed(fmt.Sprintf("message has %d characters; keep it under %d", utf8.RuneCountInString(msg), MaxMessage))
	case in.EverySeconds < 0:
		return failed("every_seconds must be positive")
	}
	loc, err := location(strings.TrimSpace(in.TZ))
	if err != nil {
		return failed(err.Error())
	}
	j := store.Job{Thread: thread, Name: strings.TrimSpace(in.Name), Message: msg, Every: time.Duration(in.EverySeconds) * time.Second,
		Cron: strings.TrimSpace(in.CronExpr), TZ: strings.TrimSpace(in.TZ), Once: in.DeleteAfterRun}
	if in.At != "" {
		if j.At, err = parseAt(in.At, loc); err != nil {
			return failed(err.Error())
		}
	}
	now := c.o.Now()
	if j.Next, err = first(j, now); err != nil {
		return failed(err.Error())
	}
	active, err := c.st.Jobs(ctx, thread, false)
	if err != nil {
		return tool.Output{}, err
	}
	if len(active) >= MaxJobs {
		return failed(fmt.Sprintf("this conversation already has %d active jobs, the most it may have; cancel some first", len(active)))
	}
	j, err = c.st.AddJob(ctx, j)
	if err != nil {
		return tool.Output{}, err
	}
	if c.o.Scheduled != nil {
		c.o.Scheduled()
	}
	return tool.Textf("scheduled %s (%s), first run %s; it runs while the rein server (rein serve) runs", j.ID, describe(j), j.Next.In(loc).Format(time.RFC3339)), nil
}

func (c *cronTool) list(ctx context.Context, thread string) (tool.Output, error) {
	jobs, err := c.st.Jobs(ctx, thread, false)
	if err != nil {
		return tool.Output{}, err
	}
	if len(jobs) == 0 {
		return tool.Text("no scheduled jobs in this conversation"), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d scheduled jobs:\n", len(jobs))
	for _, j := range jobs {
		b.WriteString(Line(j))
		b.WriteByte('\n')
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

// Line describes a job on one line: id, schedule, next run, name and
// message.
func Line(j store.Job) string {
	next := "no next run"
	if !j.Next.IsZero() {
		loc, err := location(j.TZ)
		if err != nil {
			loc = time.Local
		}
		next = "next " + j.Next.In(loc).Format(time.RFC3339)
	}
	name := ""
	if j.Name != "" {
		name = j.Name + ": "
	}
	msg := strings.Join(strings.Fields(j.Message), " ")
	if r := []rune(msg); len(r) > 120 {
		msg = string(r[:119]) + "…"
	}
	return fmt.Sprintf("- %s  %s, %s, %d runs (%s)  %s%s", j.ID, describe(j), next, j.Runs, j.Status, name, msg)
}

func failed(msg string) (tool.Output, error) { return tool.Output{Text: msg, Failed: true}, nil }
