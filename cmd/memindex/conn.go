package main

import (
	"flag"

	"memindex/internal/natsconn"
)

// connFlags are the NATS connection flags (natsconn.Config), named as the
// nats CLI names them, flags and environment variables. Secrets (password,
// token) have no flag default, so usage never shows them.
type connFlags struct{ natsconn.Config }

func (c *connFlags) register(fs *flag.FlagSet, defServer string) {
	fs.StringVar(&c.Server, "server", env("NATS_URL", defServer), "NATS server URL(s), comma separated (NATS_URL)")
	fs.StringVar(&c.Creds, "creds", env("NATS_CREDS", ""), "NATS credentials file (NATS_CREDS)")
	fs.StringVar(&c.NKey, "nkey", env("NATS_NKEY", ""), "NATS nkey user seed file (NATS_NKEY)")
	fs.StringVar(&c.User, "user", env("NATS_USER", ""), "NATS user name (NATS_USER)")
	fs.StringVar(&c.Password, "password", "", "NATS password; prefer NATS_PASSWORD or NATS_PASSWORD_FILE, a flag shows in process lists")
	fs.StringVar(&c.Token, "token", "", "NATS authentication token; prefer NATS_TOKEN or NATS_TOKEN_FILE, a flag shows in process lists")
	fs.StringVar(&c.TLSCert, "tlscert", env("NATS_CERT", ""), "TLS client certificate file (NATS_CERT); any TLS option makes TLS required")
	fs.StringVar(&c.TLSKey, "tlskey", env("NATS_KEY", ""), "TLS client private key file (NATS_KEY)")
	fs.StringVar(&c.TLSCA, "tlsca", env("NATS_CA", ""), "CA certificate file to verify the server with (NATS_CA); any TLS option makes TLS required")
	fs.StringVar(&c.Context, "context", env("NATS_CONTEXT", ""), "nats CLI context to take url, credentials and TLS files from (NATS_CONTEXT)")
	fs.DurationVar(&c.Timeout, "timeout", natsconn.DefaultTimeout, "time to wait for NATS operations")
}
