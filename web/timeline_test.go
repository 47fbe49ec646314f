package web_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// traceEvent is one event of Chromium's trace (the Performance panel's
// timeline), as the Tracing domain reports it.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Ts   float64         `json:"ts"`  // µs
	Dur  float64         `json:"dur"` // µs
	Args json.RawMessage `json:"args"`
}

// recordTimeline starts recording the tab's Performance timeline; the
// returned func stops it and returns the events.
func recordTimeline(t *testing.T, ctx context.Context) (stop func() []traceEvent) {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var evs []traceEvent
	data := chromedp.Events(lctx, tracing.DataCollected)
	complete := chromedp.Events(lctx, tracing.TracingComplete)
	completed := make(chan struct{})
	go func() {
		for range complete {
			close(completed)
			return
		}
	}()
	go func() {
		for d, err := range data {
			if err != nil {
				return
			}
			mu.Lock()
			for _, v := range d.Value {
				var e traceEvent
				if json.Unmarshal(v, &e) == nil {
					evs = append(evs, e)
				}
			}
			mu.Unlock()
		}
	}()
	_, err := chromedp.Call(ctx, tracing.Start, tracing.StartParams{
		TransferMode: tracing.StartTransferModeReportEvents,
		TraceConfig: &tracing.TraceConfig{RecordMode: tracing.TraceConfigRecordModeRecordAsMuchAsPossible,
			IncludedCategories: []string{"toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing"}},
	})
	if err != nil {
		cancel()
		t.Fatalf("Tracing.start: %v", err)
	}
	return func() []traceEvent {
		defer cancel()
		if _, err := chromedp.Call(ctx, tracing.End, struct{}{}); err != nil {
			t.Fatalf("Tracing.end: %v", err)
		}
		select {
		case <-completed:
		case <-time.After(60 * time.Second):
			t.Errorf("Tracing.tracingComplete did not come within a minute")
		}
		// The last dataCollected comes before tracingComplete; give the
		// reader a moment to take it.
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
}

// longTask is one task over the line on the renderer's main thread, and
// the time of what ran in it, by event name, each event's own time (not
// that of events inside it).
type longTask struct {
	ms   float64
	self map[string]float64
}

func (l longTask) String() string {
	type kv struct {
		k string
		v float64
	}
	var parts []kv
	for k, v := range l.self {
		parts = append(parts, kv{k, v})
	}
	slices.SortFunc(parts, func(a, b kv) int { return cmp.Compare(b.v, a.v) })
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f ms:", l.ms)
	for i, p := range parts {
		if i == 5 || p.v < 1 {
			break
		}
		fmt.Fprintf(&b, " %s %.0f", p.k, p.v)
	}
	return b.String()
}

// longTasks finds the top-level tasks of the renderers' main threads that
// took over limit ms, and what each spent its time on.
func longTasks(evs []traceEvent, limit float64) (out []longTask, total map[string]float64) {
	main := map[[2]int]bool{}
	for _, e := range evs {
		if e.Ph == "M" && e.Name == "thread_name" && strings.Contains(string(e.Args), `"CrRendererMain"`) {
			main[[2]int{e.Pid, e.Tid}] = true
		}
	}
	// Complete events of the main threads; B/E pairs made complete.
	byThread := map[[2]int][]traceEvent{}
	open := map[[2]int][]traceEvent{}
	for _, e := range evs {
		k := [2]int{e.Pid, e.Tid}
		if !main[k] {
			continue
		}
		switch e.Ph {
		case "X":
			byThread[k] = append(byThread[k], e)
		case "B":
			open[k] = append(open[k], e)
		case "E":
			if s := open[k]; len(s) > 0 {
				b := s[len(s)-1]
				open[k] = s[:len(s)-1]
				b.Dur = e.Ts - b.Ts
				b.Ph = "X"
				byThread[k] = append(byThread[k], b)
			}
		}
	}
	total = map[string]float64{}
	for _, list := range byThread {
		slices.SortFunc(list, func(a, b traceEvent) int {
			return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(b.Dur, a.Dur))
		})
		for i := 0; i < len(list); {
			top := list[i]
			end := top.Ts + top.Dur
			j := i + 1
			for j < len(list) && list[j].Ts < end {
				j++
			}
			if top.Dur/1000 > limit {
				lt := longTask{ms: top.Dur / 1000, self: map[string]float64{}}
				selfTimes(list[i:j], lt.self)
				for k, v := range lt.self {
					total[k] += v
				}
				out = append(out, lt)
			}
			i = j
		}
	}
	slices.SortFunc(out, func(a, b longTask) int { return cmp.Compare(b.ms, a.ms) })
	return out, total
}

// selfTimes adds to self each event's time less that of the events
// nested in it, in ms; evs are sorted by start, the outermost first.
func selfTimes(evs []traceEvent, self map[string]float64) {
	type frame struct {
		e     traceEvent
		inner float64
	}
	var stack []frame
	pop := func() {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		self[f.e.Name] += max(0, f.e.Dur-f.inner) / 1000
		if len(stack) > 0 {
			stack[len(stack)-1].inner += f.e.Dur
		}
	}
	for _, e := range evs {
		for len(stack) > 0 && stack[len(stack)-1].e.Ts+stack[len(stack)-1].e.Dur <= e.Ts {
			pop()
		}
		stack = append(stack, frame{e: e})
	}
	for len(stack) > 0 {
		pop()
	}
}

// sumByName adds up, over the main threads, the time of the events named
// names, in ms, and how many there were.
func sumByName(evs []traceEvent, names ...string) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, e := range evs {
		if e.Ph == "X" && slices.Contains(names, e.Name) {
			v := out[e.Name]
			v[0] += e.Dur / 1000
			v[1]++
			out[e.Name] = v
		}
	}
	return out
}

// growth is the mean time of each event named names in each quarter of the
// recording (by time, between the first and the last of them), in ms: a
// cost that grows with a streaming message grows from quarter to quarter.
func growth(evs []traceEvent, names ...string) map[string][4]float64 {
	lo, hi := 0.0, 0.0
	for _, e := range evs {
		if e.Ph == "X" && slices.Contains(names, e.Name) {
			if lo == 0 || e.Ts < lo {
				lo = e.Ts
			}
			hi = max(hi, e.Ts)
		}
	}
	sum := map[string]*[2][4]float64{}
	for _, e := range evs {
		if e.Ph != "X" || !slices.Contains(names, e.Name) || hi <= lo {
			continue
		}
		q := min(3, int(4*(e.Ts-lo)/(hi-lo)))
		s := sum[e.Name]
		if s == nil {
			s = &[2][4]float64{}
			sum[e.Name] = s
		}
		s[0][q] += e.Dur / 1000
		s[1][q]++
	}
	out := map[string][4]float64{}
	for name, s := range sum {
		var m [4]float64
		for q := range 4 {
			if s[1][q] > 0 {
				m[q] = s[0][q] / s[1][q]
			}
		}
		out[name] = m
	}
	return out
}

// layoutArgs are the counts a Layout or UpdateLayoutTree event carries.
type layoutArgs struct {
	BeginData struct {
		DirtyObjects int `json:"dirtyObjects"`
		TotalObjects int `json:"totalObjects"`
	} `json:"beginData"`
	ElementCount int `json:"elementCount"`
}

// counts is the mean, per quarter of the recording, of the objects a
// Layout marked dirty and the elements an UpdateLayoutTree restyled.
func counts(evs []traceEvent) (dirty, restyled [4]float64) {
	lo, hi := 0.0, 0.0
	for _, e := range evs {
		if e.Ph == "X" && (e.Name == "Layout" || e.Name == "UpdateLayoutTree") {
			if lo == 0 || e.Ts < lo {
				lo = e.Ts
			}
			hi = max(hi, e.Ts)
		}
	}
	var nd, nr [4]float64
	for _, e := range evs {
		if e.Ph != "X" || hi <= lo || (e.Name != "Layout" && e.Name != "UpdateLayoutTree") {
			continue
		}
		var a layoutArgs
		json.Unmarshal(e.Args, &a)
		q := min(3, int(4*(e.Ts-lo)/(hi-lo)))
		if e.Name == "Layout" {
			dirty[q] += float64(a.BeginData.DirtyObjects)
			nd[q]++
		} else {
			restyled[q] += float64(a.ElementCount)
			nr[q]++
		}
	}
	for q := range 4 {
		if nd[q] > 0 {
			dirty[q] /= nd[q]
		}
		if nr[q] > 0 {
			restyled[q] /= nr[q]
		}
	}
	return dirty, restyled
}
