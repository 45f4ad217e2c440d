// Package memindex is the wire vocabulary shared by publishers, workers and
// clients: the event and search types with their validation within
// configurable size limits (Limits, limits.go), the subjects and
// stream names, the error codes, the partition function and the NATS header
// trace carrier.
//
// It owns the contract, not the behaviour: it imports nothing beyond the
// standard library and performs no I/O, so any publisher or client can depend
// on it without pulling in NATS, SQLite or an embedding provider.
package memindex
