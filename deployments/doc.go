// Package deployments holds configuration for running memindex (see
// README.md): nats-server configs (a single server and a 3-node JetStream
// cluster), docker-compose, the Dockerfile, Kubernetes manifests with values
// for the NATS Helm chart, and a systemd unit.
//
// Its Go code is tests only. They parse every nats-server config with the
// server's own parser and start the cluster configs in-process, parse every
// YAML file, and check what the worker relies on: its data directory on a
// volume of its own, health checks on /readyz of its --http port, and longer
// than a drain to stop. The Dockerfile is checked statically against the
// Makefile and go.mod. cmd/memindex/deployments_test.go checks every flag
// and MEMINDEX_* / NATS_* variable used here against `memindex serve`.
//
// It must not hold production code, and nothing may import it.
package deployments
