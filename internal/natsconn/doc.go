// Package natsconn owns how memindex connects to NATS: credentials files,
// nkeys, user and password, tokens, nats CLI contexts, and TLS with no
// fallback to plaintext. Config holds the settings the nats CLI names
// (cmd/memindex registers them as flags); Connect turns them into a
// connection and explains a failed one in words a user can act on.
//
// It must never put a password, token or seed in an error message or log
// line, and never connect in plaintext when a TLS option is set. It holds no
// flag parsing: that is cmd's.
package natsconn
