package trace_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

func samplePage(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.WriteHTML(&buf, trace.Turns(sampleEvents())[0]); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestPageIsSelfContainedAndEscaped(t *testing.T) {
	page := samplePage(t)
	// Nothing is fetched: no external scripts, styles, images or fonts.
	for _, re := range []string{`(?i)\b(src|href)\s*=`, `(?i)url\(\s*['"]?(https?:|//)`, `(?i)@import`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("the page refers to something outside itself: %q", m)
		}
	}
	if strings.Count(page, "<script>") != 1 {
		t.Errorf("%d script elements, want only the page's own", strings.Count(page, "<script>"))
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",    // the answer's markup is text
		"Summarise &lt;b&gt;a.txt&lt;/b&gt; &amp;", // so is the prompt's
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// chromium returns the path of a Chromium binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install chromium); the page is not rendered")
	return ""
}

// headless runs Chromium on file with extra flags and returns its stdout.
func headless(t *testing.T, bin, file string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
		// Time for the page's script to run before the DOM is taken.
		"--virtual-time-budget=2000",
	}, flags...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String()
}

// TestPageRendersInChromium opens the page in headless Chromium: the
// script ran without an error and saw every bar, and the parts of the page
// are there in the rendered DOM. TRACE_SCREENSHOT=FILE also keeps a
// screenshot to look at.
func TestPageRendersInChromium(t *testing.T) {
	bin := chromium(t)
	file := filepath.Join(t.TempDir(), "trace.html")
	if err := os.WriteFile(file, []byte(samplePage(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, file, "--dump-dom")

	if m := regexp.MustCompile(`data-error="([^"]*)"`).FindStringSubmatch(dom); m != nil {
		t.Fatalf("the page's script failed: %s", m[1])
	}
	if !strings.Contains(dom, `data-ok="1"`) {
		t.Fatalf("the page's script did not finish (no data-ok marker):\n%.2000s", dom)
	}
	// 4 model calls, 5 tool calls, 1 wait.
	if !strings.Contains(dom, `data-bars="10"`) {
		t.Errorf("the script counted %s bars, want 10", regexp.MustCompile(`data-bars="\d+"`).FindString(dom))
	}
	checks := []struct {
		what string
		re   string
		n    int
	}{
		{"model call rows", `class="row model `, 4},
		{"tool call rows", `class="row tool `, 5},
		{"a wait on the user", `class="row wait `, 1},
		{"tools that ran", `class="row tool status-ok"`, 3},
		{"failed tool", `class="row tool status-error"`, 1},
		{"the call that never ran", `class="row tool status-not_run notrun"`, 1},
		{"settlement round marked", `class="row model phase-settle"`, 1},
		{"forced round marked", `class="row model phase-final"`, 1},
		{"settlement badge", `<span class="badge settlement">settlement</span>`, 3},
		{"forced badge", `<span class="badge forced">forced</span>`, 3},
		{"retry mark", `class="mark retry"`, 1},
		{"turn-level warnings", `class="mark warn (settlement|forced)"`, 2},
		{"round table rows", `<tr class="round-row"`, 4},
		{"per-round tokens", `<td class="num">1400</td>`, 1},
		{"per-round cost", `<td class="num">\$0\.0024</td>`, 1},
		{"the answer, as text", `<pre class="answer" id="answer">a.txt says alpha; b.txt says beta. &lt;script&gt;alert\(1\)&lt;/script&gt;</pre>`, 1},
		{"status", `<span class="badge completed" id="status">completed</span>`, 1},
		{"details to click through to", `<details id="call-1-0">`, 1},
	}
	for _, c := range checks {
		if got := len(regexp.MustCompile(c.re).FindAllString(dom, -1)); got != c.n {
			t.Errorf("%s: %d matches of %s, want %d", c.what, got, c.re, c.n)
		}
	}
	// The answer's <script> stayed text: the page has its own script only.
	if n := strings.Count(dom, "<script>"); n != 1 {
		t.Errorf("%d script elements in the DOM, want 1", n)
	}

	if shot := os.Getenv("TRACE_SCREENSHOT"); shot != "" {
		abs, err := filepath.Abs(shot)
		if err != nil {
			t.Fatal(err)
		}
		headless(t, bin, file, "--screenshot="+abs, "--window-size=1280,1400")
		if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
			t.Errorf("no screenshot at %s: %v", abs, err)
		}
	}
}
