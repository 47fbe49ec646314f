package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ssrfListener accepts connections on addr and counts them; it answers each
// with a page an attacker would want ("internal admin").
func ssrfListener(t *testing.T, addr netip.Addr) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	var hits atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.SetDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4096)
			c.Read(buf)
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ninternal admin")
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/admin", &hits
}

// ssrfFetch has the model (scripted) fetch url with web_fetch through the
// real binary and returns the tool's result as the --json output shows it.
func ssrfFetch(t *testing.T, bin, url string) string {
	t.Helper()
	home := t.TempDir()
	script := filepath.Join(t.TempDir(), "script.yaml")
	body := "rounds:\n  - calls:\n      - {name: web_fetch, args: {url: \"" + url + "\"}}\n  - text: done\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--json", "--db", filepath.Join(home, "rein.db"),
		"--model", "scripted:"+script, "--workspace", t.TempDir(), "fetch the page")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rein run: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		var ev struct {
			Type, Name, Content string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "result" && ev.Name == "web_fetch" {
			return ev.Content
		}
	}
	t.Fatalf("no web_fetch result in the output:\n%s", stdout.String())
	return ""
}

// ssrfCheckRefused fails unless web_fetch refused url and nothing reached
// the listener.
func ssrfCheckRefused(t *testing.T, bin, url string, hits *atomic.Int32) {
	t.Helper()
	res := ssrfFetch(t, bin, url)
	if n := hits.Load(); n != 0 {
		t.Errorf("web_fetch reached the machine's own service (%d connections); result: %s", n, res)
	}
	if !strings.Contains(res, "web_fetch refuses") || strings.Contains(res, "internal admin") {
		t.Errorf("result %q, want a refusal", res)
	}
}

// TestSSRFOwnInterfaceAddressRefused attacks the machine's own services
// through its non-loopback interface addresses, where a service bound to
// 0.0.0.0 or to that address listens: a model asked to fetch
// http://<this machine's address>/admin must be refused before a byte is
// sent. (Here eth0's address lay in TEST-NET-1, which web_fetch took for
// public.)
func TestSSRFOwnInterfaceAddressRefused(t *testing.T) {
	bin := reinBinary(t)
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface list: %v", err)
	}
	tried := 0
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || ip.Unmap().IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		ip = ip.Unmap()
		t.Run(ip.String(), func(t *testing.T) {
			url, hits := ssrfListener(t, ip)
			ssrfCheckRefused(t, bin, url, hits)
		})
		tried++
	}
	if tried == 0 {
		t.Skip("the machine has no non-loopback interface address")
	}
}

// ssrfNetnsChild marks the test binary re-run inside a network namespace.
const ssrfNetnsChild = "REIN_SSRF_NETNS_CHILD"

// ssrfPublicOwn is a public-looking address (just past CGNAT's range)
// given to loopback inside a private network namespace: what a cloud VM's
// public address is to a service bound on it.
const ssrfPublicOwn = "100.128.0.1"

// TestSSRFOwnPublicLookingAddressRefused: an interface address that no
// range rule refuses (a VM's public address) still reaches the machine's
// own services, so web_fetch must refuse it for being the machine's own.
// The address is added inside a network namespace of its own (unshare -n,
// as root), where the test re-runs itself with the listener and rein.
func TestSSRFOwnPublicLookingAddressRefused(t *testing.T) {
	if os.Getenv(ssrfNetnsChild) != "" {
		ssrfNetnsScenario(t)
		return
	}
	bin := reinBinary(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	setup := "ip link set lo up && ip addr add " + ssrfPublicOwn + "/32 dev lo && exec \"$0\" \"$@\""
	if out, err := exec.Command("unshare", "-n", "sh", "-c", "ip link set lo up").CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here (needs root): %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", setup, self,
		"-test.run", "^TestSSRFOwnPublicLookingAddressRefused$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), ssrfNetnsChild+"="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSSRFOwnPublicLookingAddressRefused") {
		t.Errorf("inside the namespace: %v\n%s", err, out)
	}
}

// ssrfNetnsScenario runs inside the namespace: the listener on the
// public-looking address of loopback, and rein fetching it.
func ssrfNetnsScenario(t *testing.T) {
	bin := os.Getenv(ssrfNetnsChild)
	url, hits := ssrfListener(t, netip.MustParseAddr(ssrfPublicOwn))
	ssrfCheckRefused(t, bin, url, hits)
}
