package web

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestClassifyRefusesEveryNonPublicRange(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		class string // "" for public
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private (RFC 1918)"},
		{"172.16.5.4", "private (RFC 1918)"},
		{"172.31.255.255", "private (RFC 1918)"},
		{"192.168.1.1", "private (RFC 1918)"},
		{"::ffff:10.1.2.3", "private (RFC 1918)"},
		{"fc00::1", "unique local (fc00::/7)"},
		{"fd12:3456::1", "unique local (fc00::/7)"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"224.0.0.1", "multicast or broadcast"},
		{"239.255.255.250", "multicast or broadcast"},
		{"ff02::1", "multicast or broadcast"},
		{"255.255.255.255", "multicast or broadcast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network (0.0.0.0/8)"},
		{"100.64.0.1", "shared (CGNAT, 100.64.0.0/10)"},
		{"100.127.255.254", "shared (CGNAT, 100.64.0.0/10)"},
		{"240.0.0.1", "reserved (240.0.0.0/4)"},
		{"64:ff9b::a00:1", "private (RFC 1918)"}, // NAT64 of 10.0.0.1
		{"2002:7f00:1::1", "loopback"},           // 6to4 of 127.0.0.1
		{"::127.0.0.1", "IPv4-compatible"},
		{"fec0::1", "site-local"},
		// Reserved and documentation ranges (issue 11).
		{"192.0.2.2", "documentation (TEST-NET-1, 192.0.2.0/24)"},
		{"198.51.100.7", "documentation (TEST-NET-2, 198.51.100.0/24)"},
		{"203.0.113.200", "documentation (TEST-NET-3, 203.0.113.0/24)"},
		{"198.18.0.1", "benchmarking (198.18.0.0/15)"},
		{"198.19.255.254", "benchmarking (198.18.0.0/15)"},
		{"192.88.99.1", "6to4 relay anycast (192.88.99.0/24)"},
		{"233.252.0.1", "multicast or broadcast"},
		{"255.255.255.254", "reserved (240.0.0.0/4)"},
		{"2001:db8::1", "documentation (2001:db8::/32)"},
		{"3fff::1", "documentation (3fff::/20)"},
		{"100::1", "discard-only (100::/64)"},
		{"ff05::2", "multicast or broadcast"},
		{"fec0:1::1", "site-local"},
		{"64:ff9b:1::a00:1", "local-use NAT64 (64:ff9b:1::/48)"},
		{"64:ff9b::c000:202", "documentation (TEST-NET-1, 192.0.2.0/24)"}, // NAT64 of 192.0.2.2
		{"::ffff:0:a00:1", "private (RFC 1918)"},                          // SIIT of 10.0.0.1
		{"2002:c000:202::1", "documentation (TEST-NET-1, 192.0.2.0/24)"},  // 6to4 of 192.0.2.2
		{"2002:a9fe:a9fe::1", "cloud metadata"},                           // 6to4 of 169.254.169.254
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"},              // Teredo, client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", "Teredo (2001::/32)"},    // Teredo, client 8.8.8.8
		{"2001:2::1", "IETF protocol (2001::/23)"},
		{"5f00::1", "segment routing (5f00::/16)"},
		// Public.
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.32.0.1", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8
		{"192.0.3.1", ""},
		{"198.20.0.1", ""},
		{"2001:db9::1", ""},
	} {
		if got := classify(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("classify(%s) = %q, want %q", tc.addr, got, tc.class)
		}
	}
}

// ownAddrs is a machine whose interfaces hold addrs, as policy.own sees
// it; calls counts the lookups.
type ownAddrs struct {
	mu    sync.Mutex
	addrs []string
	calls int
}

func (o *ownAddrs) set(addrs ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addrs = addrs
}

func (o *ownAddrs) list() ([]netip.Addr, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	var out []netip.Addr
	for _, a := range o.addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func withOwn(o *ownAddrs) Option { return func(c *config) { c.policy.own = o.list } }

// TestPolicyRefusesTheMachinesOwnAddresses: an address of one of the
// machine's interfaces reaches its own services even when it looks public
// (a cloud VM's public address, a host's bridge), so it is refused — and
// the list is read at each check, so an address added later is refused too.
func TestPolicyRefusesTheMachinesOwnAddresses(t *testing.T) {
	own := &ownAddrs{}
	p := policy{own: own.list}
	if err := p.check("93.184.216.34", netip.MustParseAddr("93.184.216.34")); err != nil {
		t.Fatalf("a public address not ours: %v", err)
	}
	own.set("127.0.0.1", "93.184.216.34", "2606:4700::1111")
	for _, a := range []string{"93.184.216.34", "::ffff:93.184.216.34", "2606:4700::1111"} {
		err := p.check(a, netip.MustParseAddr(a))
		var be *BlockedError
		if !errors.As(err, &be) || be.Class != ownClass {
			t.Errorf("%s, now an interface's: err %v, want a *BlockedError of class %q", a, err, ownClass)
		}
	}
	// Loopback stays loopback, allowed when asked.
	if err := (policy{allowLoopback: true, own: own.list}).check("127.0.0.1", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("loopback allowed for tests: %v", err)
	}
	// Without the list, nothing public is trusted.
	broken := policy{own: func() ([]netip.Addr, error) { return nil, errors.New("netlink: permission denied") }}
	if err := broken.check("8.8.8.8", netip.MustParseAddr("8.8.8.8")); err == nil || !strings.Contains(err.Error(), "own addresses could not be listed") {
		t.Errorf("with no interface list: err %v, want a refusal", err)
	}
}

func TestInterfaceAddrsListsThisMachine(t *testing.T) {
	addrs, err := interfaceAddrs()
	if err != nil {
		t.Skipf("no interface list here: %v", err)
	}
	if !slices.Contains(addrs, netip.MustParseAddr("127.0.0.1")) && !slices.Contains(addrs, netip.MustParseAddr("::1")) {
		t.Errorf("interfaceAddrs = %v, want loopback among them", addrs)
	}
}

func TestPolicyAllowsLoopbackOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		allow bool
		ok    bool
	}{
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, true},
		{"::1", true, true},
		// Allowing loopback allows nothing else.
		{"10.0.0.1", true, false},
		{"169.254.169.254", true, false},
		{"0.0.0.0", true, false},
	} {
		err := policy{allowLoopback: tc.allow}.check(tc.addr, netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("%s allowLoopback=%v: err %v", tc.addr, tc.allow, err)
		}
		var be *BlockedError
		if err != nil && !errors.As(err, &be) {
			t.Errorf("%s: %T is not a *BlockedError", tc.addr, err)
		}
	}
}

// TestDialerSocketCheckRefusesWhatSlipsPast shows the last line of
// defence: even a dial that bypasses resolve is checked before the socket
// connects.
func TestDialerSocketCheckRefusesWhatSlipsPast(t *testing.T) {
	d := newDialer(policy{}, nil)
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "10.0.0.1:80", "169.254.169.254:80"} {
		_, err := d.net.DialContext(context.Background(), "tcp", addr)
		var be *BlockedError
		if !errors.As(err, &be) {
			t.Errorf("%s: err %v, want a *BlockedError", addr, err)
		}
	}
}
