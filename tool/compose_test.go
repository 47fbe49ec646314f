package tool

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// named is a tool that only has a name.
type named string

func (n named) Spec() Spec { return Spec{Name: string(n)} }
func (n named) Run(context.Context, Call) (Output, error) {
	return Text(string(n)), nil
}

// registry returns a set of tools with every name of the policy and the
// extra names.
func registry(extra ...string) *Set {
	s := &Set{}
	for _, m := range Mounts() {
		for _, n := range m.Tools {
			s.Add(named(n))
		}
	}
	for _, n := range AlwaysOn() {
		s.Add(named(n))
	}
	for _, n := range extra {
		s.Add(named(n))
	}
	return s
}

func gates(on ...Flag) map[Flag]Gate {
	g := map[Flag]Gate{}
	for _, m := range Mounts() {
		g[m.Flag] = On(slices.Contains(on, m.Flag))
	}
	return g
}

var always = []string{"write_memory", "web_fetch", "github", "ask_user", "cron", "task"}

func TestComposeMountsEachFlagsRowBeforeTheAlwaysOnTools(t *testing.T) {
	for _, tc := range []struct {
		flags []Flag
		want  []string
	}{
		{nil, always},
		{[]Flag{HasKB}, append([]string{"rag", "kb_files"}, always...)},
		{[]Flag{HasSources}, append([]string{"read_source"}, always...)},
		{[]Flag{HasMemory}, append([]string{"read_memory"}, always...)},
		{[]Flag{HasNotebooks}, append([]string{"list_notebook", "write_note"}, always...)},
		{[]Flag{HasSkills}, append([]string{"read_skill"}, always...)},
		{[]Flag{HasDeferredTools}, append([]string{"load_tools"}, always...)},
		{[]Flag{HasExec}, append([]string{"exec"}, always...)},
		{[]Flag{HasCode}, append([]string{"code_execution"}, always...)},
		// The table's order, not the order the flags are given in.
		{[]Flag{HasCode, HasKB, HasExec}, append([]string{"rag", "kb_files", "exec", "code_execution"}, always...)},
	} {
		set, rep := Compose(context.Background(), Composition{Registry: registry(), Gates: gates(tc.flags...)})
		if got := set.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("flags %v: got %v, want %v", tc.flags, got, tc.want)
		}
		if got := rep.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("flags %v: report lists %v, want %v", tc.flags, got, tc.want)
		}
		// Every tool of every row whose flag is off is reported out with
		// its flag named.
		for _, m := range Mounts() {
			for _, n := range m.Tools {
				d, ok := rep.Decision(n)
				if !ok {
					t.Errorf("flags %v: %s missing from the report", tc.flags, n)
					continue
				}
				if d.In != slices.Contains(tc.flags, m.Flag) {
					t.Errorf("flags %v: %s in=%v", tc.flags, n, d.In)
				}
				if !strings.Contains(d.Reason, string(m.Flag)) {
					t.Errorf("flags %v: %s reason %q does not name %s", tc.flags, n, d.Reason, m.Flag)
				}
			}
		}
	}
}

func TestComposeOrdersTheFourStepsAndKeepsTheFirstOfDuplicates(t *testing.T) {
	reg := registry("brainstorm", "solve_plan", "solve_step")
	set, rep := Compose(context.Background(), Composition{
		Registry:   reg,
		Enabled:    []string{"brainstorm", "brainstorm"},
		Gates:      gates(HasExec),
		Capability: &Capability{Name: "solve", Tools: []string{"solve_plan", "solve_step", "ask_user"}},
	})
	want := []string{"brainstorm", "exec", "solve_plan", "solve_step", "ask_user", "write_memory", "web_fetch", "github", "cron", "task"}
	if got := set.Names(); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for name, reason := range map[string]string{
		"brainstorm": "switched on by the user",
		"exec":       "mounted: has_exec",
		"solve_plan": `owned by the capability "solve"`,
		// The capability named it first, so that is its reason.
		"ask_user": `owned by the capability "solve"`,
		"cron":     "always on",
	} {
		if d, _ := rep.Decision(name); d.Reason != reason || !d.In {
			t.Errorf("%s: %+v, want in because %q", name, d, reason)
		}
	}
	if rep.Capability != "solve" || rep.Exclusive {
		t.Errorf("report capability %q exclusive %v", rep.Capability, rep.Exclusive)
	}
}

func TestComposeExclusiveCapabilityKeepsOnlyItsToolsAskUserAndTheKB(t *testing.T) {
	vault := &Capability{Name: "vault", Tools: []string{"vault_read", "vault_search"}, Exclusive: true}
	for _, tc := range []struct {
		name  string
		flags []Flag
		want  []string
	}{
		{"no kb", []Flag{HasExec, HasMemory}, []string{"vault_read", "vault_search", "ask_user"}},
		{"kb", []Flag{HasKB, HasExec}, []string{"vault_read", "vault_search", "rag", "kb_files", "ask_user"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			g := gates(tc.flags...)
			g[HasMemory] = func(context.Context) (bool, error) { calls++; return true, nil }
			set, rep := Compose(context.Background(), Composition{
				Registry:   registry("vault_read", "vault_search", "brainstorm"),
				Enabled:    []string{"brainstorm"},
				Gates:      g,
				Capability: vault,
			})
			if got := set.Names(); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if calls != 0 {
				t.Errorf("the memory gate ran %d times in an exclusive turn", calls)
			}
			for _, name := range []string{"brainstorm", "exec", "web_fetch", "read_memory"} {
				if d, _ := rep.Decision(name); d.In || !strings.Contains(d.Reason, `"vault" is exclusive`) {
					t.Errorf("%s: %+v", name, d)
				}
			}
			if !rep.Exclusive {
				t.Error("report does not say exclusive")
			}
		})
	}
}

func TestComposeForcedBypassesGatesAndSuppressedWins(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c          Composition
		want       []string
		out        string
		outBecause string
	}{
		{
			name: "forced bypasses an off flag",
			c:    Composition{Gates: gates(), Forced: []string{"exec"}},
			want: append(slices.Clone(always), "exec"),
		},
		{
			name: "forced bypasses a failing gate",
			c: Composition{Gates: map[Flag]Gate{HasMemory: func(context.Context) (bool, error) {
				return false, errors.New("store locked")
			}}, Forced: []string{"read_memory"}},
			want: append(slices.Clone(always), "read_memory"),
		},
		{
			name: "forced in an exclusive turn",
			c: Composition{Capability: &Capability{Name: "v", Tools: []string{"rag"}, Exclusive: true},
				Forced: []string{"partner_search"}},
			want: []string{"rag", "ask_user", "partner_search"},
		},
		{
			name: "forced already present stays where it was",
			c:    Composition{Forced: []string{"github"}},
			want: always,
		},
		{
			name:       "suppressed removes an always-on tool",
			c:          Composition{Suppressed: []string{"write_memory"}},
			want:       always[1:],
			out:        "write_memory",
			outBecause: "suppressed (it was always on)",
		},
		{
			name:       "suppressed removes a mounted tool",
			c:          Composition{Gates: gates(HasMemory), Suppressed: []string{"read_memory"}},
			want:       always,
			out:        "read_memory",
			outBecause: "suppressed (it was mounted: has_memory)",
		},
		{
			name:       "suppressed beats forced",
			c:          Composition{Forced: []string{"exec"}, Suppressed: []string{"exec"}},
			want:       always,
			out:        "exec",
			outBecause: "suppressed (it was forced)",
		},
		{
			name:       "suppressed removes a capability's tool in an exclusive turn",
			c:          Composition{Capability: &Capability{Name: "v", Tools: []string{"rag"}, Exclusive: true}, Suppressed: []string{"ask_user"}},
			want:       []string{"rag"},
			out:        "ask_user",
			outBecause: "suppressed",
		},
		{
			name:       "withheld removes a tool and gives its reason",
			c:          Composition{Withheld: map[string]string{"write_memory": "the sandbox is read-only"}},
			want:       always[1:],
			out:        "write_memory",
			outBecause: "suppressed: the sandbox is read-only (it was always on)",
		},
		{
			name:       "withheld beats forced",
			c:          Composition{Forced: []string{"exec"}, Withheld: map[string]string{"exec": "no sandbox"}},
			want:       always,
			out:        "exec",
			outBecause: "suppressed: no sandbox (it was forced)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Registry = registry("partner_search")
			tc.c.Logger = slog.New(slog.DiscardHandler)
			set, rep := Compose(context.Background(), tc.c)
			if got := set.Names(); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.out != "" {
				if d, _ := rep.Decision(tc.out); d.In || !strings.Contains(d.Reason, tc.outBecause) {
					t.Errorf("%s: %+v, want out because %q", tc.out, d, tc.outBecause)
				}
			}
		})
	}
}

func TestComposeGateThatFailsMountsNothingAndLogsWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate Gate
		want string
	}{
		{"error", func(context.Context) (bool, error) { return true, errors.New("memory store: database is locked") }, "database is locked"},
		{"panic", func(context.Context) (bool, error) { panic("nil store") }, "gate panicked: nil store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			set, rep := Compose(context.Background(), Composition{
				Registry: registry(),
				Gates:    map[Flag]Gate{HasMemory: tc.gate, HasExec: On(true)},
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if _, ok := set.Get("read_memory"); ok {
				t.Fatal("read_memory mounted although its gate failed")
			}
			if _, ok := set.Get("exec"); !ok {
				t.Error("a failing gate took another flag's tool with it")
			}
			d, _ := rep.Decision("read_memory")
			if d.In || !strings.Contains(d.Reason, "has_memory could not be computed") || !strings.Contains(d.Reason, tc.want) {
				t.Errorf("read_memory: %+v", d)
			}
			for _, f := range rep.Flags {
				if f.Flag == HasMemory && (f.On || !strings.Contains(f.Err, tc.want)) {
					t.Errorf("flag: %+v", f)
				}
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "has_memory") || !strings.Contains(l, tc.want) {
				t.Errorf("log: %q", l)
			}
		})
	}
}

func TestComposeCancelledContextFailsEveryGateClosed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	set, _ := Compose(ctx, Composition{Registry: registry(), Gates: gates(HasKB, HasExec),
		Logger: slog.New(slog.DiscardHandler)})
	if got := set.Names(); !slices.Equal(got, always) {
		t.Errorf("got %v, want only the always-on tools", got)
	}
}

func TestComposeSkipsUnregisteredNamesWithAReason(t *testing.T) {
	reg := NewSet(named("ask_user"), named("exec"))
	set, rep := Compose(context.Background(), Composition{
		Registry:   reg,
		Gates:      gates(HasExec, HasKB),
		Capability: &Capability{Name: "c", Tools: []string{"ghost"}},
		Forced:     []string{"phantom"},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if got, want := set.Names(), []string{"exec", "ask_user"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for name, reason := range map[string]string{
		"rag":     "mounted: has_kb, but not registered",
		"ghost":   `owned by the capability "c", but not registered`,
		"phantom": "forced, but not registered",
		"cron":    "always on, but not registered",
	} {
		if d, ok := rep.Decision(name); !ok || d.In || d.Reason != reason {
			t.Errorf("%s: %+v, want out because %q", name, d, reason)
		}
	}
}

func TestComposeUserMaySwitchOnOnlyOptionalTools(t *testing.T) {
	for _, tc := range []struct {
		name     string
		optional []string
		enabled  string
		in       bool
		because  string
	}{
		{"derived optional set", nil, "brainstorm", true, "switched on by the user"},
		{"gated tool", nil, "exec", false, "mounted only when has_exec holds"},
		{"explicit optional set", []string{"reason"}, "brainstorm", false, "not an optional tool"},
		{"explicit optional set allows", []string{"brainstorm"}, "brainstorm", true, "switched on by the user"},
		{"capability's tool", nil, "solve_plan", true, `owned by the capability "solve"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rep := Compose(context.Background(), Composition{
				Registry:   registry("brainstorm", "reason", "solve_plan"),
				Optional:   tc.optional,
				Enabled:    []string{tc.enabled},
				Capability: &Capability{Name: "solve", Tools: []string{"solve_plan"}},
			})
			d, _ := rep.Decision(tc.enabled)
			if d.In != tc.in || !strings.Contains(d.Reason, tc.because) {
				t.Errorf("%+v, want in=%v because %q", d, tc.in, tc.because)
			}
		})
	}
}

func TestComposeReportsRegisteredToolsThatAreOut(t *testing.T) {
	_, rep := Compose(context.Background(), Composition{Registry: registry("brainstorm")})
	d, ok := rep.Decision("brainstorm")
	if !ok || d.In || d.Reason != "optional, not switched on" {
		t.Errorf("%+v", d)
	}
	// The set's tools come first, in order, then the others.
	seenOut := false
	for _, d := range rep.Tools {
		if !d.In {
			seenOut = true
		} else if seenOut {
			t.Fatalf("%s is in but listed after a tool that is out: %+v", d.Name, rep.Tools)
		}
	}
}

func TestMountedByIsDerivedFromTheTable(t *testing.T) {
	n := 0
	for _, m := range Mounts() {
		for _, name := range m.Tools {
			n++
			if f, ok := MountedBy(name); !ok || f != m.Flag {
				t.Errorf("MountedBy(%s) = %v %v, want %v", name, f, ok, m.Flag)
			}
		}
	}
	if n != 10 {
		t.Errorf("the table mounts %d tools, DESIGN §7.2 lists 10", n)
	}
	if _, ok := MountedBy("web_fetch"); ok {
		t.Error("web_fetch is always on, not mounted by a flag")
	}
	m := Mounts()
	m[0].Tools[0] = "changed"
	if Mounts()[0].Tools[0] != "rag" {
		t.Error("Mounts returned the table itself")
	}
}

// TestComposeOfferedToolsMountInStepOneWithTheirReason checks that a tool
// offered without being switched on (web_search with a search backend)
// comes after the switched-on tools and before the mounts, with its
// reason; that an exclusive capability and --no-tool keep it out.
func TestComposeOfferedToolsMountInStepOneWithTheirReason(t *testing.T) {
	reg := registry("brainstorm", "web_search")
	offered := map[string]string{"web_search": "a search backend is configured (brave)"}
	set, rep := Compose(context.Background(), Composition{
		Registry: reg, Enabled: []string{"brainstorm"}, Offered: offered, Gates: gates(HasExec),
	})
	want := append([]string{"brainstorm", "web_search", "exec"}, always...)
	if got := set.Names(); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if d, _ := rep.Decision("web_search"); !d.In || d.Reason != offered["web_search"] {
		t.Errorf("%+v", d)
	}

	set, rep = Compose(context.Background(), Composition{Registry: reg, Offered: offered, Suppressed: []string{"web_search"}})
	if _, ok := set.Get("web_search"); ok {
		t.Error("suppressed, yet mounted")
	}
	if d, _ := rep.Decision("web_search"); d.In || !strings.HasPrefix(d.Reason, "suppressed") {
		t.Errorf("%+v", d)
	}

	set, rep = Compose(context.Background(), Composition{Registry: reg, Offered: offered,
		Capability: &Capability{Name: "solve", Tools: []string{"brainstorm"}, Exclusive: true}})
	if _, ok := set.Get("web_search"); ok {
		t.Error("an exclusive capability's turn got web_search")
	}
	if d, _ := rep.Decision("web_search"); d.In || !strings.Contains(d.Reason, "exclusive") {
		t.Errorf("%+v", d)
	}
}
