package natsconn

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"memindex/internal/secret"
)

// DefaultTimeout is how long to wait for NATS operations when Config sets
// no Timeout.
const DefaultTimeout = 5 * time.Second

// Config is the NATS connection settings, named as the nats CLI names
// them. Secrets (password, token) come from the field, the environment
// (NAME or NAME_FILE) or the context, in that order, and no error message or
// log line contains them.
type Config struct {
	Server   string // URL(s), comma separated
	Creds    string // credentials file
	Context  string // nats CLI context name
	User     string
	Password string
	Token    string
	NKey     string // nkey seed file
	TLSCert  string
	TLSKey   string
	TLSCA    string
	Timeout  time.Duration // of connecting and NATS operations; 0: DefaultTimeout
	// Log receives the connection's asynchronous errors (permission
	// violations, slow consumer); nil leaves them to nats.go, which prints
	// them on stderr.
	Log *slog.Logger
}

// natsContext is the part of a nats CLI context file memindex uses; the
// JSON names are the nats CLI's.
type natsContext struct {
	URL      string `json:"url"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
}

// loadContext reads the nats CLI context name from
// $XDG_CONFIG_HOME/nats/context/name.json (~/.config on Linux).
func loadContext(name string) (natsContext, error) {
	var nctx natsContext
	dir, err := os.UserConfigDir()
	if err != nil {
		return nctx, fmt.Errorf("--context %q: %w", name, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "nats", "context", name+".json"))
	if err != nil {
		return nctx, fmt.Errorf("--context %q: %w (create it with `nats context save`)", name, err)
	}
	if err := json.Unmarshal(b, &nctx); err != nil {
		// The JSON error may quote the file; the file holds secrets.
		return nctx, fmt.Errorf("--context %q: %s is not a nats context JSON file", name, filepath.Join(dir, "nats", "context", name+".json"))
	}
	return nctx, nil
}

// Resolve completes c from the environment's secrets and the nats context,
// and checks that the settings make one way to authenticate. It returns the
// server URL(s) to connect to.
func (c *Config) Resolve() (string, error) {
	var err error
	if c.Password == "" {
		if c.Password, err = secret.Get("NATS_PASSWORD"); err != nil {
			return "", err
		}
	}
	if c.Token == "" {
		if c.Token, err = secret.Get("NATS_TOKEN"); err != nil {
			return "", err
		}
	}
	url := c.Server
	if c.Context != "" {
		nctx, err := loadContext(c.Context)
		if err != nil {
			return "", err
		}
		if url == "" || url == nats.DefaultURL {
			url = nctx.URL
		}
		// The context's credentials apply only when flags and environment
		// name none: a flag is the more specific choice.
		if c.Creds == "" && c.NKey == "" && c.User == "" && c.Token == "" {
			c.Creds, c.NKey, c.User, c.Password, c.Token = nctx.Creds, nctx.NKey, nctx.User, nctx.Password, nctx.Token
		}
		c.TLSCert, c.TLSKey, c.TLSCA = or(c.TLSCert, nctx.Cert), or(c.TLSKey, nctx.Key), or(c.TLSCA, nctx.CA)
	}
	if url == "" {
		url = nats.DefaultURL
	}
	var methods []string
	for _, m := range []struct{ name, val string }{{"--creds", c.Creds}, {"--nkey", c.NKey}, {"--user", c.User}, {"--token", c.Token}} {
		if m.val != "" {
			methods = append(methods, m.name)
		}
	}
	switch {
	case len(methods) > 1:
		return "", fmt.Errorf("%s are all set: choose one way to authenticate to NATS (check the flags and NATS_* variables)", strings.Join(methods, ", "))
	case c.Password != "" && c.User == "":
		return "", errors.New("a NATS password is set (--password or NATS_PASSWORD) but no user: set --user or NATS_USER")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return "", errors.New("--tlscert (NATS_CERT) and --tlskey (NATS_KEY) go together: set both or neither")
	}
	return url, nil
}

// Options returns the nats.go options of c for a connection named name.
func (c *Config) Options(name string) ([]nats.Option, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(timeout), nats.MaxReconnects(-1)}
	if c.Log != nil {
		log := c.Log
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{"err", err}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			log.Warn("NATS asynchronous error", attrs...)
		}))
	}
	switch {
	case c.Creds != "":
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nkey %s: %w", c.NKey, err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if c.TLSCert != "" || c.TLSCA != "" {
		opts = append(opts, nats.Secure())
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	return opts, nil
}

// Connect connects to NATS with the settings in c. When a TLS option is set
// the connection is TLS or nothing: a server that does not offer TLS is
// refused, never used in plaintext.
func (c *Config) Connect(name string) (*nats.Conn, error) {
	url, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	opts, err := c.Options(name)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, c.connectError(url, err)
	}
	return nc, nil
}

// connectError explains a failed connection in words a user can act on.
// It names the server without the credentials its URL may carry.
func (c *Config) connectError(url string, err error) error {
	at := RedactURL(url)
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("connect to NATS at %s: the server does not offer TLS, refusing plaintext (TLS is required because --tlsca, --tlscert or a tls:// URL is set): %w", at, err)
	case errors.As(err, &unknownCA):
		ca := "the system's trusted CAs (set --tlsca or NATS_CA to the server's CA certificate)"
		if c.TLSCA != "" {
			ca = c.TLSCA + " (--tlsca or NATS_CA)"
		}
		return fmt.Errorf("connect to NATS at %s: TLS: the server's certificate is not signed by a CA in %s; refusing the connection: %w", at, ca, err)
	case errors.As(err, &badHost):
		return fmt.Errorf("connect to NATS at %s: TLS: the server's certificate is not valid for this host name or address; refusing the connection: %w", at, err)
	case errors.Is(err, nats.ErrAuthorization):
		return fmt.Errorf("connect to NATS at %s: the server refused the credentials (check --creds, --nkey, --user/NATS_PASSWORD, --token or the context): %w", at, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("connect to NATS at %s: %w (check the --creds, --nkey and --tls* file paths)", at, err)
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("connect to NATS at %s: %w (is `memindex serve` running? set --server or NATS_URL)", at, err)
	}
	return fmt.Errorf("connect to NATS at %s: %w", at, err)
}

// RedactURL replaces the user information of each comma-separated URL in s
// (nats://user:password@host or nats://token@host) with "redacted".
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		rest := p
		scheme := ""
		if j := strings.Index(p, "://"); j >= 0 {
			scheme, rest = p[:j+3], p[j+3:]
		}
		host := rest
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			host = rest[:j]
		}
		if at := strings.LastIndex(host, "@"); at >= 0 {
			parts[i] = scheme + "redacted@" + rest[at+1:]
		}
	}
	return strings.Join(parts, ",")
}

// or returns a, or b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
