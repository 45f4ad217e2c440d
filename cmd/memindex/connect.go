package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
)

// connFlags are the NATS connection settings, named as the nats CLI names them.
type connFlags struct {
	server  string
	creds   string
	context string
	timeout time.Duration
}

func (c *connFlags) register(fs *flag.FlagSet, defServer string) {
	fs.StringVar(&c.server, "server", env("NATS_URL", defServer), "NATS server URL(s), comma separated (NATS_URL)")
	fs.StringVar(&c.creds, "creds", env("NATS_CREDS", ""), "NATS credentials file (NATS_CREDS)")
	fs.StringVar(&c.context, "context", env("NATS_CONTEXT", ""), "nats CLI context name to take url and creds from (NATS_CONTEXT)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "time to wait for NATS operations")
}

// natsContext is the part of a nats CLI context file memindex uses.
type natsContext struct {
	URL      string `json:"url"`
	Creds    string `json:"creds"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
}

func (c *connFlags) connect(name string) (*nats.Conn, error) {
	url, opts := c.server, []nats.Option{nats.Name(name), nats.Timeout(c.timeout), nats.MaxReconnects(-1)}
	if c.context != "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("nats context: %w", err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "nats", "context", c.context+".json"))
		if err != nil {
			return nil, fmt.Errorf("nats context %q: %w", c.context, err)
		}
		var nctx natsContext
		if err := json.Unmarshal(b, &nctx); err != nil {
			return nil, fmt.Errorf("nats context %q: %w", c.context, err)
		}
		if url == "" || url == nats.DefaultURL {
			url = nctx.URL
		}
		if c.creds == "" {
			c.creds = nctx.Creds
		}
		if nctx.User != "" {
			opts = append(opts, nats.UserInfo(nctx.User, nctx.Password))
		}
		if nctx.Token != "" {
			opts = append(opts, nats.Token(nctx.Token))
		}
	}
	if url == "" {
		url = nats.DefaultURL
	}
	if c.creds != "" {
		opts = append(opts, nats.UserCredentials(c.creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w (is `memindex serve` running? set --server or NATS_URL)", url, err)
	}
	return nc, nil
}
