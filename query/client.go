package query

import (
	"github.com/nats-io/nats.go"

	"memindex/client"
)

// NewClient returns a client.Client over nc.
//
// Deprecated: the client lives in package client, which builds without
// cgo; use client.NewClient. This forwarder stays while cmd/memindex's
// bench files call it.
func NewClient(nc *nats.Conn) *client.Client { return client.NewClient(nc) }
