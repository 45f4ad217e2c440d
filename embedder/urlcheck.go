package embedder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// A provider's base URL comes from configuration, and a provider answers
// with redirects: both could point the worker at something it must not
// reach from inside a cloud VM (server-side request forgery). CheckURL
// refuses such URLs as written; SafeDialContext refuses such addresses as
// resolved, at connect time, so a hostname that resolves (or rebinds) to one
// is refused too; NewSafeHTTPClient combines both and checks redirects.
//
// Private addresses (10/8, 172.16/12, 192.168/16, fc00::/7) are allowed: a
// self-hosted provider on the local network is a normal setup.

const (
	// maxRedirects is how many redirects a safe client follows.
	maxRedirects = 5
	// safeDialTimeout bounds one connection attempt of SafeDialContext.
	safeDialTimeout = 10 * time.Second
)

// cloudMetadataHosts are names of instance metadata services.
var cloudMetadataHosts = map[string]bool{
	"metadata.google.internal":   true, // Google Cloud
	"metadata.goog":              true, // Google Cloud
	"metadata":                   true, // Google Cloud, through the search domain
	"instance-data":              true, // AWS
	"instance-data.ec2.internal": true, // AWS
	"metadata.tencentyun.com":    true, // Tencent Cloud
}

// cloudMetadataAddrs are addresses of instance metadata and credential
// services. Most are link-local and refused as such anyway; they are listed
// so that the error names them for what they are.
var cloudMetadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, Google, Azure, Oracle, DigitalOcean, …
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"):  true, // AWS EKS pod identity
	netip.MustParseAddr("fd00:ec2::23"):    true, // AWS EKS pod identity over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("169.254.0.23"):    true, // Tencent Cloud
}

// nat64 is the well-known NAT64 prefix: 64:ff9b::a9fe:a9fe reaches
// 169.254.169.254 through a NAT64 gateway.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// CheckURL returns an error wrapping ErrUnsafeURL, and saying why, unless raw
// is an absolute http or https URL without userinfo whose host is not a
// cloud metadata name or address, not link-local (169.254.0.0/16,
// fe80::/10), not unspecified (0.0.0.0/8, ::), not multicast, and not a
// numeric host in a non-canonical form (2852039166, 0x7f.1) that some
// resolvers would read as an address. Loopback is allowed when the URL names
// it literally: localhost, an address in 127.0.0.0/8, or ::1 (a local
// Ollama). A hostname is not resolved here; SafeDialContext checks the
// addresses it resolves to. The error never contains the URL's userinfo,
// path or query.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold credentials
		}
		return fmt.Errorf("unparsable URL (%v): %w", err, ErrUnsafeURL)
	}
	return checkParsedURL(u)
}

func checkParsedURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" { // url.Parse lowercases it
		return fmt.Errorf("scheme %q is not http or https: %w", u.Scheme, ErrUnsafeURL)
	}
	if u.User != nil {
		return fmt.Errorf("the URL carries userinfo; credentials go in headers: %w", ErrUnsafeURL)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return fmt.Errorf("the URL has no host: %w", ErrUnsafeURL)
	}
	return checkHost(u.Hostname(), true)
}

// checkHost checks a URL's or a dialled address's host: an IP address with
// checkIP (loopback allowed if allowLoopback), a name against the metadata
// names and the non-canonical numeric forms.
func checkHost(host string, allowLoopback bool) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		return checkIP(ip, allowLoopback)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if cloudMetadataHosts[name] {
		return fmt.Errorf("%s is a cloud metadata address: %w", name, ErrUnsafeURL)
	}
	if numericHost(name) {
		return fmt.Errorf("%q is an IP address in a non-canonical form: %w", host, ErrUnsafeURL)
	}
	return nil
}

// numericHost reports whether every dot-separated label of host is a decimal,
// octal or hex number, the forms inet_aton reads as an IPv4 address.
func numericHost(host string) bool {
	for label := range strings.SplitSeq(host, ".") {
		digits, hex := label, false
		if len(label) > 2 && (label[:2] == "0x" || label[:2] == "0X") {
			digits, hex = label[2:], true
		}
		if digits == "" {
			return false
		}
		for _, r := range digits {
			if !('0' <= r && r <= '9' || hex && ('a' <= r && r <= 'f' || 'A' <= r && r <= 'F')) {
				return false
			}
		}
	}
	return true
}

// checkIP returns an error wrapping ErrUnsafeURL, and saying why, if ip is a
// cloud metadata, unspecified, link-local or multicast address, or a
// loopback address and allowLoopback is false. IPv4-mapped and NAT64
// addresses are judged by the IPv4 address they carry.
func checkIP(ip netip.Addr, allowLoopback bool) error {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case cloudMetadataAddrs[ip]:
		return fmt.Errorf("%s is a cloud metadata address: %w", ip, ErrUnsafeURL)
	case ip.IsUnspecified() || ip.Is4() && ip.As4()[0] == 0:
		return fmt.Errorf("%s is an unspecified address: %w", ip, ErrUnsafeURL)
	case ip.IsLinkLocalUnicast():
		return fmt.Errorf("%s is a link-local address: %w", ip, ErrUnsafeURL)
	case ip.IsMulticast():
		return fmt.Errorf("%s is a multicast address: %w", ip, ErrUnsafeURL)
	case ip.IsLoopback() && !allowLoopback:
		return fmt.Errorf("%s is a loopback address, reachable only through a URL that names loopback (localhost, 127.0.0.1, [::1]): %w", ip, ErrUnsafeURL)
	}
	return nil
}

// literalLoopback reports whether host names loopback itself: localhost, or
// an address in 127.0.0.0/8 or ::1.
func literalLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// SafeDialContext returns a dial function for http.Transport.DialContext that
// checks each address it connects to, after name resolution and just before
// the connection, with the rules of CheckURL; so a hostname that resolves to
// a metadata or link-local address, at first or after a DNS rebinding, is
// refused. Loopback addresses are reached only when allowLoopback is true
// and the dialled host names loopback literally (localhost, 127.0.0.1, ::1):
// a hostname that resolves to loopback is refused. Refusals wrap
// ErrUnsafeURL.
func SafeDialContext(allowLoopback bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		loopback := allowLoopback && literalLoopback(host)
		if err := checkHost(host, loopback); err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		d := net.Dialer{Timeout: safeDialTimeout, KeepAlive: 30 * time.Second, Control: dialControl(loopback)}
		return d.DialContext(ctx, network, addr)
	}
}

// dialControl returns a net.Dialer.Control hook that refuses, with checkIP,
// to connect to the resolved address. Anything but an IP address and port
// (a Unix socket path) is refused.
func dialControl(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%s address %q is not an IP address and port: %w", network, address, ErrUnsafeURL)
		}
		return checkIP(ap.Addr(), allowLoopback)
	}
}

// NewSafeHTTPClient returns an http.Client for talking to the provider at
// rawURL, after CheckURL accepts it. Its transport connects through
// SafeDialContext, reaching loopback only if rawURL names loopback literally,
// and does not use a proxy from the environment (a proxy would resolve hosts
// out of reach of the dial-time check). It follows at most 5 redirects, each
// to a URL CheckURL accepts, never from https to http, and to loopback only if
// rawURL named loopback. timeout bounds each request as http.Client.Timeout
// does; 0 means no bound. Errors wrap ErrUnsafeURL, or ErrInvalidConfig for a
// negative timeout.
func NewSafeHTTPClient(rawURL string, timeout time.Duration) (*http.Client, error) {
	if timeout < 0 {
		return nil, fmt.Errorf("timeout %v: %w", timeout, ErrInvalidConfig)
	}
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	u, _ := url.Parse(rawURL) // CheckURL parsed it
	loopback := literalLoopback(u.Hostname())
	tr := &http.Transport{
		DialContext:           SafeDialContext(loopback),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: safeRedirects(loopback)}, nil
}

// safeRedirects is the CheckRedirect policy of NewSafeHTTPClient.
func safeRedirects(allowLoopback bool) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("stopped after %d redirects: %w", maxRedirects, ErrUnsafeURL)
		}
		to := req.URL
		if prev := via[len(via)-1].URL; prev.Scheme == "https" && to.Scheme != "https" {
			return fmt.Errorf("redirect from https to %s refused: %w", displayURL(to), ErrUnsafeURL)
		}
		if err := checkParsedURL(to); err != nil {
			return fmt.Errorf("redirect to %s: %w", displayURL(to), err)
		}
		if !allowLoopback && literalLoopback(to.Hostname()) {
			return fmt.Errorf("redirect to %s: loopback, which the provider URL did not name: %w", displayURL(to), ErrUnsafeURL)
		}
		return nil
	}
}

// displayURL returns u for an error message: scheme, host and path, without
// userinfo and query (which may hold credentials, such as an API key).
func displayURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
