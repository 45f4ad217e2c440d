package embedder

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		why  string // a substring of the refusal; "" means allowed
		name string
	}{
		{url: "https://api.openai.com", name: "public https"},
		{url: "https://api.openai.com/v1/embeddings?x=1", name: "public with path and query"},
		{url: "http://localhost:11434", name: "local ollama"},
		{url: "HTTP://LocalHost.:11434/", name: "localhost in another case with the root dot"},
		{url: "http://127.0.0.1:8080/v1", name: "loopback v4"},
		{url: "http://127.3.4.5/", name: "elsewhere in 127/8"},
		{url: "http://[::1]:11434", name: "loopback v6"},
		{url: "http://10.0.0.7:8080", name: "private network"},
		{url: "http://[fd12::1]/", name: "unique local v6"},
		{url: "http://ollama.internal:11434", name: "internal name"},
		{url: "http://1e100.net/", name: "name starting with digits"},

		{url: "http://169.254.169.254/latest/meta-data", why: "169.254.169.254 is a cloud metadata address", name: "aws metadata"},
		{url: "http://[fd00:ec2::254]/latest/meta-data", why: "fd00:ec2::254 is a cloud metadata address", name: "aws metadata v6"},
		{url: "http://100.100.100.200/latest/meta-data", why: "100.100.100.200 is a cloud metadata address", name: "alibaba metadata"},
		{url: "http://169.254.170.2/v2/credentials", why: "cloud metadata", name: "ecs credentials"},
		{url: "http://metadata.google.internal/computeMetadata/v1/", why: "metadata.google.internal is a cloud metadata address", name: "gcp metadata"},
		{url: "http://METADATA.google.internal./", why: "cloud metadata", name: "gcp metadata, case and root dot"},
		{url: "http://metadata.goog/", why: "metadata.goog is a cloud metadata address", name: "gcp metadata.goog"},
		{url: "http://[::ffff:169.254.169.254]/", why: "169.254.169.254 is a cloud metadata address", name: "v4-mapped metadata"},
		{url: "http://[64:ff9b::a9fe:a9fe]/", why: "169.254.169.254 is a cloud metadata address", name: "nat64 metadata"},
		{url: "http://169.254.10.1/", why: "169.254.10.1 is a link-local address", name: "link-local v4"},
		{url: "http://[fe80::1]/", why: "fe80::1 is a link-local address", name: "link-local v6"},
		{url: "http://[fe80::1%25eth0]/", why: "link-local", name: "link-local v6 with zone"},
		{url: "http://0.0.0.0/", why: "0.0.0.0 is an unspecified address", name: "unspecified v4"},
		{url: "http://0.1.2.3:80/", why: "unspecified", name: "this network"},
		{url: "http://[::]:11434/", why: ":: is an unspecified address", name: "unspecified v6"},
		{url: "http://224.0.0.1/", why: "multicast", name: "multicast"},
		{url: "http://2852039166/", why: "non-canonical", name: "decimal address"},
		{url: "http://0x7f.1/", why: "non-canonical", name: "hex address"},
		{url: "http://0177.0.0.1/", why: "non-canonical", name: "octal address"},
		{url: "http://0/", why: "non-canonical", name: "zero"},
		{url: "ftp://x", why: `scheme "ftp" is not http or https`, name: "ftp"},
		{url: "file:///etc/passwd", why: "scheme", name: "file"},
		{url: "gopher://localhost:11211/", why: "scheme", name: "gopher"},
		{url: "api.openai.com/v1", why: "scheme", name: "no scheme"},
		{url: "http://user:pw@host/", why: "userinfo", name: "user and password"},
		{url: "https://key@api.openai.com/", why: "userinfo", name: "user only"},
		{url: "http:///v1", why: "no host", name: "empty host"},
		{url: "http:localhost", why: "no host", name: "opaque"},
		{url: "http://[::1/", why: "unparsable", name: "unparsable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckURL(tc.url)
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
			case tc.why == "":
			case err == nil:
				t.Fatalf("CheckURL(%q) = nil, want an error saying %q", tc.url, tc.why)
			case !errors.Is(err, ErrUnsafeURL):
				t.Fatalf("CheckURL(%q) = %v, want ErrUnsafeURL", tc.url, err)
			case !strings.Contains(err.Error(), tc.why):
				t.Fatalf("CheckURL(%q) = %q, want it to say %q", tc.url, err, tc.why)
			}
		})
	}
}

func TestCheckURLNeverShowsCredentials(t *testing.T) {
	for _, raw := range []string{
		"http://alice:s3cret@api.example.com/",
		"http://alice:s3cret@169.254.169.254/",
		"https://alice:s3cret@host:99999999999/",
		"http://alice:s3cret@[::1/",
		"http://alice:s3cret@ho st/",
		"http://alice:s3%zzcret@host/",
		"ftp://alice:s3cret@host/",
	} {
		err := CheckURL(raw)
		if err == nil {
			t.Fatalf("CheckURL(%q) = nil, want an error", raw)
		}
		if msg := err.Error(); strings.Contains(msg, "s3") || strings.Contains(msg, "alice") {
			t.Errorf("CheckURL(%q) = %q: shows the userinfo", raw, msg)
		}
	}
}

func TestCheckIP(t *testing.T) {
	for _, tc := range []struct {
		ip            string
		allowLoopback bool
		why           string // "" means allowed
	}{
		{"93.184.216.34", false, ""},
		{"2606:4700::1111", false, ""},
		{"10.1.2.3", false, ""},
		{"192.168.1.10", false, ""},
		{"127.0.0.1", true, ""},
		{"127.0.0.1", false, "127.0.0.1 is a loopback address"},
		{"127.9.9.9", false, "loopback"},
		{"::1", true, ""},
		{"::1", false, "::1 is a loopback address"},
		{"::ffff:127.0.0.1", false, "127.0.0.1 is a loopback address"},
		{"169.254.169.254", true, "169.254.169.254 is a cloud metadata address"},
		{"fd00:ec2::254", true, "fd00:ec2::254 is a cloud metadata address"},
		{"100.100.100.200", true, "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", true, "169.254.169.254 is a cloud metadata address"},
		{"169.254.1.2", true, "link-local"},
		{"fe80::1", true, "link-local"},
		{"fe80::1%eth0", true, "link-local"},
		{"0.0.0.0", true, "unspecified"},
		{"::", true, "unspecified"},
		{"ff02::1", true, "multicast"},
	} {
		err := checkIP(netip.MustParseAddr(tc.ip), tc.allowLoopback)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("checkIP(%s, %t) = %v, want nil", tc.ip, tc.allowLoopback, err)
		case tc.why == "":
		case err == nil || !errors.Is(err, ErrUnsafeURL) || !strings.Contains(err.Error(), tc.why):
			t.Errorf("checkIP(%s, %t) = %v, want ErrUnsafeURL saying %q", tc.ip, tc.allowLoopback, err, tc.why)
		}
	}
}

// TestDialControl checks the connect-time hook with resolved addresses, as a
// name resolving (or rebinding) to them would reach it.
func TestDialControl(t *testing.T) {
	for _, tc := range []struct {
		network, addr string
		allowLoopback bool
		ok            bool
	}{
		{"tcp4", "93.184.216.34:443", false, true},
		{"tcp4", "127.0.0.1:11434", true, true},
		{"tcp4", "127.0.0.1:11434", false, false},
		{"tcp6", "[::1]:11434", false, false},
		{"tcp4", "169.254.169.254:80", true, false},
		{"tcp6", "[fd00:ec2::254]:80", true, false},
		{"tcp6", "[fe80::1%eth0]:80", true, false},
		{"unix", "/var/run/docker.sock", true, false},
	} {
		err := dialControl(tc.allowLoopback)(tc.network, tc.addr, nil)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("dialControl(%t)(%s, %s) = %v, want ok=%t", tc.allowLoopback, tc.network, tc.addr, err, tc.ok)
		}
	}
}

// newLoopbackServer serves "hello" at / and redirects /to?u=URL to URL and
// /hop/N to /hop/N-1 (/hop/0 answers "hello").
func newLoopbackServer(tb testing.TB, tlsOn bool) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "hello")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	srv := httptest.NewUnstartedServer(mux)
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	tb.Cleanup(srv.Close)
	return srv
}

// get fetches url with c and returns the body.
func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestSafeClientReachesLiteralLoopback(t *testing.T) {
	ctx := context.Background()
	srv := newLoopbackServer(t, false) // listens on 127.0.0.1
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, base := range []string{srv.URL, fmt.Sprintf("http://localhost:%d", port)} {
		c, err := NewSafeHTTPClient(base, 5*time.Second)
		if err != nil {
			t.Fatalf("NewSafeHTTPClient(%s): %v", base, err)
		}
		if body, err := get(ctx, c, base+"/"); err != nil || body != "hello" {
			t.Fatalf("GET %s/ = %q, %v; want hello", base, body, err)
		}
		// Five redirects are followed, a sixth is not.
		if body, err := get(ctx, c, base+"/hop/5"); err != nil || body != "hello" {
			t.Fatalf("GET %s/hop/5 = %q, %v; want hello", base, body, err)
		}
		if _, err := get(ctx, c, base+"/hop/6"); !errors.Is(err, ErrUnsafeURL) || !strings.Contains(err.Error(), "stopped after 5 redirects") {
			t.Fatalf("GET %s/hop/6: %v, want ErrUnsafeURL after 5 redirects", base, err)
		}
	}
}

func TestSafeClientRefusesRedirectToMetadata(t *testing.T) {
	srv := newLoopbackServer(t, false)
	c, err := NewSafeHTTPClient(srv.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://metadata.google.internal/computeMetadata/v1/?recursive=true",
		"http://[fe80::1]/",
		"file:///etc/passwd",
		"http://alice:s3cret@127.0.0.1/",
	} {
		_, err := get(context.Background(), c, srv.URL+"/to?u="+to)
		if !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("GET redirecting to %s: %v, want ErrUnsafeURL", to, err)
		}
	}
}

func TestSafeClientRefusesHTTPSDowngrade(t *testing.T) {
	plain := newLoopbackServer(t, false)
	secure := newLoopbackServer(t, true)
	c, err := NewSafeHTTPClient(secure.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: secureRoots(t, secure)}
	if body, err := get(context.Background(), c, secure.URL+"/hop/1"); err != nil || body != "hello" {
		t.Fatalf("GET over https = %q, %v; want hello", body, err)
	}
	_, err = get(context.Background(), c, secure.URL+"/to?u="+plain.URL+"/")
	if !errors.Is(err, ErrUnsafeURL) || !strings.Contains(err.Error(), "from https") {
		t.Fatalf("GET redirecting from https to http: %v, want ErrUnsafeURL", err)
	}
}

// secureRoots returns the pool that trusts srv's certificate.
func secureRoots(tb testing.TB, srv *httptest.Server) *x509.CertPool {
	tb.Helper()
	return srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

func TestSafeClientRefusesLoopbackItWasNotMadeFor(t *testing.T) {
	srv := newLoopbackServer(t, false)
	c, err := NewSafeHTTPClient("https://api.openai.com/v1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A hostname that resolved to the server's address would be dialled so.
	dial := c.Transport.(*http.Transport).DialContext
	if conn, err := dial(context.Background(), "tcp", srv.Listener.Addr().String()); !errors.Is(err, ErrUnsafeURL) {
		if conn != nil {
			conn.Close()
		}
		t.Fatalf("dial %s: %v, want ErrUnsafeURL", srv.Listener.Addr(), err)
	}
	// A redirect from the provider to loopback is refused before dialling.
	via := []*http.Request{httptest.NewRequest(http.MethodPost, "https://api.openai.com/v1/embeddings", nil)}
	for to, ok := range map[string]bool{
		"https://api.openai.com/v2/embeddings": true,
		"https://localhost:11434/":             false,
		"https://127.0.0.1/":                   false,
		"https://[::1]/":                       false,
		"http://api.openai.com/":               false, // downgrade
	} {
		err := c.CheckRedirect(httptest.NewRequest(http.MethodPost, to, nil), via)
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("CheckRedirect(%s) = %v, want ok=%t", to, err, ok)
		}
	}
}

func TestSafeDialContext(t *testing.T) {
	ctx := context.Background()
	srv := newLoopbackServer(t, false)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		allowLoopback bool
		addr          string
		ok            bool
	}{
		{true, net.JoinHostPort("127.0.0.1", port), true},
		{true, net.JoinHostPort("localhost", port), true},
		{false, net.JoinHostPort("127.0.0.1", port), false},
		{false, net.JoinHostPort("localhost", port), false},
		{true, "169.254.169.254:80", false},
		{true, "metadata.google.internal:80", false}, // refused before any lookup
		{true, "2852039166:80", false},
	} {
		conn, err := SafeDialContext(tc.allowLoopback)(ctx, "tcp", tc.addr)
		if conn != nil {
			conn.Close()
		}
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrUnsafeURL) {
			t.Errorf("SafeDialContext(%t)(%s) = %v, want ok=%t", tc.allowLoopback, tc.addr, err, tc.ok)
		}
	}

	// A name that is not loopback but resolves to it (as a rebinding DNS
	// answer would) is refused even when loopback is allowed. The machine's
	// own name often resolves so from /etc/hosts, with no network.
	host, err := os.Hostname()
	if err != nil || literalLoopback(host) {
		t.Skip("no usable host name")
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 || !ips[0].Unmap().IsLoopback() {
		t.Skipf("host name %q does not resolve to loopback here (%v, %v)", host, ips, err)
	}
	conn, err := SafeDialContext(true)(ctx, "tcp", net.JoinHostPort(host, port))
	if conn != nil {
		conn.Close()
	}
	if !errors.Is(err, ErrUnsafeURL) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("SafeDialContext(true)(%s:%s), a name resolving to %v: %v, want ErrUnsafeURL", host, port, ips, err)
	}
}

func TestNewSafeHTTPClientRefuses(t *testing.T) {
	if _, err := NewSafeHTTPClient("http://169.254.169.254/", time.Second); !errors.Is(err, ErrUnsafeURL) {
		t.Errorf("NewSafeHTTPClient(metadata) = %v, want ErrUnsafeURL", err)
	}
	if _, err := NewSafeHTTPClient("https://api.openai.com", -time.Second); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewSafeHTTPClient(negative timeout) = %v, want ErrInvalidConfig", err)
	}
}
