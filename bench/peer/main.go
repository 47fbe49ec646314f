// Command peer runs the same workloads through rein and through
// charm.land/fantasy in one process and prints the medians as Markdown
// tables (bench/RESULTS-peer.md). It lives in a module of its own so the
// product does not depend on fantasy.
//
// Workloads, each through both engines, interleaved sample by sample:
//
//  1. Engine overhead per round with an in-memory model (rein: llm/scripted;
//     fantasy: an in-memory LanguageModel streaming the same content): a turn
//     of 49 rounds of one noop call, then the answer, on a thread with 0 or
//     1,000 earlier rounds. ns/round and allocs/round are marginal:
//     (50-round turn − 1-round turn) / 49, so the turn's setup is left out.
//  2. 8 calls of a 200 ms read-only tool in one round, then the answer: the
//     turn's wall time.
//  3. A 50-round turn over HTTP against a mock Chat Completions server
//     streaming SSE over loopback (rein: llm/openai.NewChat; fantasy:
//     providers/openai): rounds/s and CPU per round. The mock server and each
//     engine's client run in processes of their own, so a client's CPU is
//     its own alone. fantasy's client is the fantasyhttp module, built on
//     the fly: fantasy's OpenAI provider and rein's adapter need different
//     openai-go versions and cannot share a binary.
//
// Usage:
//
//	cd bench/peer && go run . [-samples 10] [-turns 100] [-http-turns 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/bench/peer/mockchat"
)

func main() {
	mockchat.ServeIfChild()
	serveClientIfChild()
	samples := flag.Int("samples", 10, "samples per engine and workload; the tables show their medians")
	turns := flag.Int("turns", 100, "workload 1: turns of each length per sample")
	httpTurns := flag.Int("http-turns", 10, "workload 3: 50-round turns per sample")
	only := flag.String("w", "1,2,3", "workloads to run")
	flag.Parse()
	if *samples < 1 || *turns < 1 || *httpTurns < 1 {
		fmt.Fprintln(os.Stderr, "peer: -samples, -turns and -http-turns must be at least 1")
		os.Exit(2)
	}
	run := func(w string) bool { return slices.Contains(strings.Split(*only, ","), w) }

	fmt.Printf("%s, %s/%s, GOMAXPROCS %d, %d CPUs; %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), loadavg())
	fmt.Printf("workloads 1 and 2 in this binary: %s\n", mockchat.Versions("charm.land/fantasy", "github.com/openai/openai-go/v3"))
	fmt.Printf("samples %d, turns %d, http-turns %d\n\n", *samples, *turns, *httpTurns)
	var err error
	if run("1") && err == nil {
		err = workloadRounds(*samples, *turns)
	}
	if run("2") && err == nil {
		err = workloadParallel(*samples)
	}
	if run("3") && err == nil {
		err = workloadHTTP(*samples, *httpTurns)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	fmt.Printf("\nend: %s\n", loadavg())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load unknown"
	}
	return "load " + strings.Join(f[:3], " ")
}

// order returns the engines that implement a workload, reversed on odd
// samples so that neither always runs first.
func order(sample int, has func(engine) bool) []engine {
	var es []engine
	for _, e := range engines {
		if has(e) {
			es = append(es, e)
		}
	}
	if sample%2 == 1 {
		slices.Reverse(es)
	}
	return es
}

// cost is what running some turns took.
type cost struct {
	wall   time.Duration
	allocs uint64
	bytes  uint64
}

// measure prepares and runs n turns, measuring only the runs.
func measure(n int, prepare func() (turn, error)) (cost, error) {
	var c cost
	var m0, m1 runtime.MemStats
	ctx := context.Background()
	runtime.GC()
	for range n {
		t, err := prepare()
		if err != nil {
			return c, err
		}
		runtime.ReadMemStats(&m0)
		t0 := time.Now()
		err = t(ctx)
		c.wall += time.Since(t0)
		runtime.ReadMemStats(&m1)
		if err != nil {
			return c, err
		}
		c.allocs += m1.Mallocs - m0.Mallocs
		c.bytes += m1.TotalAlloc - m0.TotalAlloc
	}
	return c, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// series collects one figure per sample for each engine.
type series map[string][]float64

func (s series) add(e string, v float64) { s[e] = append(s[e], v) }
func (s series) med(e string) float64    { return median(s[e]) }

// cell is the median with the middle half of the samples (first to third
// quartile) in brackets.
func (s series) cell(e, format string) string {
	xs := slices.Clone(s[e])
	slices.Sort(xs)
	n := len(xs)
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", median(xs), xs[n/4], xs[(3*n-1)/4])
}

// ratio is rein's median over fantasy's.
func (s series) ratio() string {
	return fmt.Sprintf("%.2f", s.med("rein")/s.med("fantasy"))
}

const perTurn = 50 // rounds of the turns of workloads 1 and 3 (rein's maximum)

func workloadRounds(samples, turns int) error {
	fmt.Println("## 1. Engine overhead per round (in-memory model, one noop call per round)")
	fmt.Println()
	fmt.Println("| history | metric | rein | fantasy | rein/fantasy |")
	fmt.Println("|---|---|---|---|---|")
	has := func(e engine) bool { return e.scripted != nil }
	for _, history := range []int{0, 1000} {
		ns, allocs, bytes, setup := series{}, series{}, series{}, series{}
		for s := range samples {
			for _, e := range order(s, has) {
				long, err := measure(turns, func() (turn, error) { return e.scripted(history, perTurn) })
				if err != nil {
					return fmt.Errorf("%s: %v", e.name, err)
				}
				short, err := measure(turns, func() (turn, error) { return e.scripted(history, 1) })
				if err != nil {
					return fmt.Errorf("%s: %v", e.name, err)
				}
				k := float64(turns * (perTurn - 1))
				ns.add(e.name, float64((long.wall-short.wall).Nanoseconds())/k)
				allocs.add(e.name, float64(long.allocs-short.allocs)/k)
				bytes.add(e.name, float64(long.bytes-short.bytes)/k)
				setup.add(e.name, float64(short.wall.Nanoseconds())/float64(turns)/1e3)
			}
		}
		row := func(metric string, s series, f string) {
			fmt.Printf("| %d | %s | %s | %s | %s |\n", history, metric, s.cell("rein", f), s.cell("fantasy", f), s.ratio())
		}
		row("ns/round", ns, "%.0f")
		row("allocs/round", allocs, "%.1f")
		row("B/round", bytes, "%.0f")
		row("1-round turn, µs", setup, "%.1f")
	}
	fmt.Println()
	return nil
}

func workloadParallel(samples int) error {
	const calls, d = 8, 200 * time.Millisecond
	fmt.Printf("## 2. %d calls of a %s read-only tool in one round, then the answer\n\n", calls, d)
	has := func(e engine) bool { return e.parallel != nil }
	ms := series{}
	for s := range samples {
		for _, e := range order(s, has) {
			c, err := measure(1, func() (turn, error) { return e.parallel(calls, d) })
			if err != nil {
				return fmt.Errorf("%s: %v", e.name, err)
			}
			ms.add(e.name, float64(c.wall.Microseconds())/1e3)
		}
	}
	fmt.Println("| engine | turn wall time, ms (median) | rein/engine |")
	fmt.Println("|---|---|---|")
	for _, e := range order(0, has) {
		fmt.Printf("| %s | %s | %.2f |\n", e.name, ms.cell(e.name, "%.1f"), ms.med("rein")/ms.med(e.name))
	}
	fmt.Println()
	return nil
}

func workloadHTTP(samples, turns int) error {
	fmt.Printf("## 3. A %d-round turn over HTTP (mock Chat Completions SSE server, loopback)\n\n", perTurn)
	srv, err := mockchat.StartServer(perTurn)
	if err != nil {
		return err
	}
	defer srv.Close()
	has := func(e engine) bool { return e.client != nil }
	clients := map[string]*mockchat.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, e := range order(0, has) {
		c, err := e.client(srv.URL+"/v1", perTurn)
		if err != nil {
			return fmt.Errorf("%s: %v", e.name, err)
		}
		clients[e.name] = c
		fmt.Printf("- client %s\n", c.Info)
	}
	fmt.Println()
	rps, wall, cpu, scpu, allocs, bytes := series{}, series{}, series{}, series{}, series{}, series{}
	for s := range samples {
		for _, e := range order(s, has) {
			s0, err := srv.CPU()
			if err != nil {
				return err
			}
			m, err := clients[e.name].Run(turns)
			if err != nil {
				return fmt.Errorf("%s: %v", e.name, err)
			}
			s1, err := srv.CPU()
			if err != nil {
				return err
			}
			n := float64(turns * perTurn)
			rps.add(e.name, n/m.Wall.Seconds())
			wall.add(e.name, float64(m.Wall.Microseconds())/n)
			cpu.add(e.name, float64(m.CPU.Microseconds())/n)
			scpu.add(e.name, float64((s1-s0).Microseconds())/n)
			allocs.add(e.name, float64(m.Allocs)/n)
			bytes.add(e.name, float64(m.Bytes)/n)
		}
	}
	fmt.Println("| metric | rein | fantasy | rein/fantasy |")
	fmt.Println("|---|---|---|---|")
	row := func(metric string, s series, f string) {
		fmt.Printf("| %s | %s | %s | %s |\n", metric, s.cell("rein", f), s.cell("fantasy", f), s.ratio())
	}
	row("rounds/s", rps, "%.0f")
	row("wall µs/round", wall, "%.0f")
	row("client CPU µs/round", cpu, "%.0f")
	row("mock server CPU µs/round", scpu, "%.0f")
	row("allocs/round (client)", allocs, "%.0f")
	row("B/round (client)", bytes, "%.0f")
	fmt.Println()
	return nil
}
