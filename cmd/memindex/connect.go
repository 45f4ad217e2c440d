package main

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// connFlags are the NATS connection settings, named as the nats CLI names
// them (flags and environment variables). Secrets (password, token) have no
// flag default, so usage never shows them; they come from the flag, the
// environment (NAME or NAME_FILE) or the context, in that order, and no error
// message or log line contains them.
type connFlags struct {
	server   string
	creds    string
	context  string
	user     string
	password string
	token    string
	nkey     string // nkey seed file
	tlsCert  string
	tlsKey   string
	tlsCA    string
	timeout  time.Duration
	// log receives the connection's asynchronous errors (permission
	// violations, slow consumer); nil leaves them to nats.go, which prints
	// them on stderr.
	log *slog.Logger
}

func (c *connFlags) register(fs *flag.FlagSet, defServer string) {
	fs.StringVar(&c.server, "server", env("NATS_URL", defServer), "NATS server URL(s), comma separated (NATS_URL)")
	fs.StringVar(&c.creds, "creds", env("NATS_CREDS", ""), "NATS credentials file (NATS_CREDS)")
	fs.StringVar(&c.nkey, "nkey", env("NATS_NKEY", ""), "NATS nkey user seed file (NATS_NKEY)")
	fs.StringVar(&c.user, "user", env("NATS_USER", ""), "NATS user name (NATS_USER)")
	fs.StringVar(&c.password, "password", "", "NATS password; prefer NATS_PASSWORD or NATS_PASSWORD_FILE, a flag shows in process lists")
	fs.StringVar(&c.token, "token", "", "NATS authentication token; prefer NATS_TOKEN or NATS_TOKEN_FILE, a flag shows in process lists")
	fs.StringVar(&c.tlsCert, "tlscert", env("NATS_CERT", ""), "TLS client certificate file (NATS_CERT); any TLS option makes TLS required")
	fs.StringVar(&c.tlsKey, "tlskey", env("NATS_KEY", ""), "TLS client private key file (NATS_KEY)")
	fs.StringVar(&c.tlsCA, "tlsca", env("NATS_CA", ""), "CA certificate file to verify the server with (NATS_CA); any TLS option makes TLS required")
	fs.StringVar(&c.context, "context", env("NATS_CONTEXT", ""), "nats CLI context to take url, credentials and TLS files from (NATS_CONTEXT)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "time to wait for NATS operations")
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

// resolve completes c from the environment's secrets and the nats context,
// and checks that the settings make one way to authenticate. It returns the
// server URL(s) to connect to.
func (c *connFlags) resolve() (string, error) {
	var err error
	if c.password == "" {
		if c.password, err = secret("NATS_PASSWORD"); err != nil {
			return "", err
		}
	}
	if c.token == "" {
		if c.token, err = secret("NATS_TOKEN"); err != nil {
			return "", err
		}
	}
	url := c.server
	if c.context != "" {
		nctx, err := loadContext(c.context)
		if err != nil {
			return "", err
		}
		if url == "" || url == nats.DefaultURL {
			url = nctx.URL
		}
		// The context's credentials apply only when flags and environment
		// name none: a flag is the more specific choice.
		if c.creds == "" && c.nkey == "" && c.user == "" && c.token == "" {
			c.creds, c.nkey, c.user, c.password, c.token = nctx.Creds, nctx.NKey, nctx.User, nctx.Password, nctx.Token
		}
		c.tlsCert, c.tlsKey, c.tlsCA = or(c.tlsCert, nctx.Cert), or(c.tlsKey, nctx.Key), or(c.tlsCA, nctx.CA)
	}
	if url == "" {
		url = nats.DefaultURL
	}
	var methods []string
	for _, m := range []struct{ name, val string }{{"--creds", c.creds}, {"--nkey", c.nkey}, {"--user", c.user}, {"--token", c.token}} {
		if m.val != "" {
			methods = append(methods, m.name)
		}
	}
	switch {
	case len(methods) > 1:
		return "", fmt.Errorf("%s are all set: choose one way to authenticate to NATS (check the flags and NATS_* variables)", strings.Join(methods, ", "))
	case c.password != "" && c.user == "":
		return "", errors.New("a NATS password is set (--password or NATS_PASSWORD) but no user: set --user or NATS_USER")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return "", errors.New("--tlscert (NATS_CERT) and --tlskey (NATS_KEY) go together: set both or neither")
	}
	return url, nil
}

func (c *connFlags) options(name string) ([]nats.Option, error) {
	opts := []nats.Option{nats.Name(name), nats.Timeout(c.timeout), nats.MaxReconnects(-1)}
	if c.log != nil {
		log := c.log
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{"err", err}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			log.Warn("NATS asynchronous error", attrs...)
		}))
	}
	switch {
	case c.creds != "":
		opts = append(opts, nats.UserCredentials(c.creds))
	case c.nkey != "":
		o, err := nats.NkeyOptionFromSeed(c.nkey)
		if err != nil {
			return nil, fmt.Errorf("--nkey %s: %w", c.nkey, err)
		}
		opts = append(opts, o)
	case c.user != "":
		opts = append(opts, nats.UserInfo(c.user, c.password))
	case c.token != "":
		opts = append(opts, nats.Token(c.token))
	}
	if c.tlsCert != "" || c.tlsCA != "" {
		opts = append(opts, nats.Secure())
	}
	if c.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.tlsCA))
	}
	if c.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.tlsCert, c.tlsKey))
	}
	return opts, nil
}

// connect connects to NATS with the settings in c. When a TLS option is set
// the connection is TLS or nothing: a server that does not offer TLS is
// refused, never used in plaintext.
func (c *connFlags) connect(name string) (*nats.Conn, error) {
	url, err := c.resolve()
	if err != nil {
		return nil, err
	}
	opts, err := c.options(name)
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
func (c *connFlags) connectError(url string, err error) error {
	at := redactURL(url)
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("connect to NATS at %s: the server does not offer TLS, refusing plaintext (TLS is required because --tlsca, --tlscert or a tls:// URL is set): %w", at, err)
	case errors.As(err, &unknownCA):
		ca := "the system's trusted CAs (set --tlsca or NATS_CA to the server's CA certificate)"
		if c.tlsCA != "" {
			ca = c.tlsCA + " (--tlsca or NATS_CA)"
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

// redactURL replaces the user information of each comma-separated URL in s
// (nats://user:password@host or nats://token@host) with "redacted".
func redactURL(s string) string {
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
