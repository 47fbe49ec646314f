package faults_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// tally counts the matrix rows passed per protocol, for the summary line.
var tally struct {
	mu          sync.Mutex
	pass, total map[string]int
}

func count(proto string, passed bool) {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if tally.total == nil {
		tally.pass, tally.total = make(map[string]int), make(map[string]int)
	}
	tally.total[proto]++
	if passed {
		tally.pass[proto]++
	}
}

// summary is the line the CI log shows, such as
// "fault matrix: chat 20/20, responses 20/20, anthropic 22/22"; empty when
// no row ran.
func summary() string {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	var parts []string
	for _, p := range protocols {
		if n := tally.total[p.name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", p.name, tally.pass[p.name], n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "fault matrix: " + strings.Join(parts, ", ")
}

// TestMain prints the summary to stdout, where `go test` shows it without
// -v in local directory mode (and for a failing package in any mode), and
// checks that no goroutine outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if s := summary(); s != "" {
		fmt.Println(s)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
