package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// Resolver looks up the addresses of a host name. *net.Resolver is one;
// tests inject their own to show that names resolving to forbidden
// addresses are refused.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// BlockedError reports a fetch refused because of the address it would
// connect to (server-side request forgery defence).
type BlockedError struct {
	// Host is the host as the URL named it.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Class says what kind of address it is ("loopback", "private", …).
	Class string
}

func (e *BlockedError) Error() string {
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("web_fetch refuses %s: it is a %s address, not a public one", e.Host, e.Class)
	}
	return fmt.Sprintf("web_fetch refuses %s: it resolves to %s, a %s address, not a public one", e.Host, e.Addr, e.Class)
}

// Special addresses with a class of their own.
var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
	broadcast  = netip.MustParseAddr("255.255.255.255")
)

// forbidden are the ranges not covered by netip's predicates, each with the
// class named in refusals: IANA's special-purpose registries, every range
// not "globally reachable" there.
var forbidden = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network (0.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT, 100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1, 192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2, 198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3, 203.0.113.0/24)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (3fff::/20)"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing (5f00::/16)"},
}

// Prefixes of IPv6 addresses that embed an IPv4 address, which is checked
// in their place: a NAT64, SIIT or 6to4 gateway would connect to it.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixTo4     = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
)

// classify returns the class of a that web_fetch refuses, or "" for a
// public address.
func classify(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a == metadataV4 || a == metadataV6:
		return "cloud metadata"
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsPrivate():
		if a.Is4() {
			return "private (RFC 1918)"
		}
		return "unique local (fc00::/7)"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a == broadcast:
		return "multicast or broadcast"
	case nat64.Contains(a), translated.Contains(a):
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(a):
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(a):
		// The client's IPv4 address is the last 32 bits inverted. A
		// Teredo relay is no web server either way: refused.
		b := a.As16()
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		if c := classify(client); c != "" {
			return c
		}
		return "Teredo (2001::/32)"
	}
	for _, f := range forbidden {
		if f.prefix.Contains(a) {
			return f.class
		}
	}
	return ""
}

// ownClass is the class of an address of one of the machine's own
// interfaces: a service bound to it is as local as one on loopback.
const ownClass = "this machine's own (a network interface's)"

// policy decides which addresses may be dialled.
type policy struct {
	allowLoopback bool
	// own lists the machine's own addresses; nil is interfaceAddrs. It is
	// asked at every check, so an address added to an interface after
	// the fetcher was made is refused too.
	own func() ([]netip.Addr, error)
}

// check returns a *BlockedError when host's address a may not be dialled.
func (p policy) check(host string, a netip.Addr) error {
	a = a.Unmap()
	class := classify(a)
	if class == "loopback" && p.allowLoopback {
		return nil
	}
	if class == "" {
		own := p.own
		if own == nil {
			own = interfaceAddrs
		}
		addrs, err := own()
		if err != nil {
			// Fail closed: without the list, any address might be ours.
			return fmt.Errorf("web_fetch refuses %s: the machine's own addresses could not be listed to rule them out: %w", host, err)
		}
		for _, o := range addrs {
			if o.Unmap() == a {
				class = ownClass
				break
			}
		}
	}
	if class == "" {
		return nil
	}
	return &BlockedError{Host: host, Addr: a, Class: class}
}

// interfaceAddrs returns the addresses of the machine's network interfaces.
func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if x, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, x.Unmap())
		}
	}
	return out, nil
}

// dialer resolves a host itself, checks every address, and connects to a
// checked address: the connection is pinned to what was checked, so a DNS
// answer that changes between a check and a connect (rebinding) cannot
// reach a forbidden address.
type dialer struct {
	policy   policy
	resolver Resolver
	net      net.Dialer
}

func newDialer(p policy, r Resolver) *dialer {
	d := &dialer{policy: p, resolver: r}
	// The last line of defence: whatever address the socket is about to
	// connect to is checked again, so no path around DialContext's checks
	// can reach a forbidden address.
	d.net.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("web_fetch: unexpected socket address %q: %w", address, err)
		}
		return p.check(ap.Addr().String(), ap.Addr())
	}
	return d
}

// DialContext is http.Transport's DialContext.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: bad port %q", portText)
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.net.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resolve returns the addresses of host, all of them checked. One
// forbidden address refuses the host: a name that answers with both a
// public and a private address is not trusted with either.
func (d *dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := d.policy.check(host, a); err != nil {
			return nil, err
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("web_fetch could not resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("web_fetch could not resolve %s: no addresses", host)
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		if err := d.policy.check(host, a); err != nil {
			return nil, err
		}
		out[i] = a.Unmap()
	}
	return out, nil
}
