// Package deployments holds configuration for running memindex: a
// nats-server config and a systemd unit (see README.md). It holds no Go code
// and must not be imported.
package deployments
