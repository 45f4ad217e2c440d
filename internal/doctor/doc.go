// Package doctor owns the checks of `memindex doctor`: whether NATS answers
// and with what, whether JetStream is enabled, whether the event and
// dead-letter streams and the partitions' consumers are configured as a
// worker sets them, the server's sync interval, the integrity of every shard
// file under a data directory, and one embedding through the configured
// provider. Each check gives a status, a detail and, when it is not ok, a
// fix in words a user can act on.
//
// It must not read flags or the environment, print, or change anything it
// checks: cmd/memindex turns flags into a Config (how to connect, how to
// build the embedder, how to lock the data directory, what to redact) and
// prints the Report. Shard files are only read (read-only beside a live
// worker, which holds the data directory's lock).
package doctor
