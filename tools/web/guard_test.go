package web

import (
	"context"
	"errors"
	"net/netip"
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
		// Public.
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.32.0.1", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
	} {
		if got := classify(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("classify(%s) = %q, want %q", tc.addr, got, tc.class)
		}
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
