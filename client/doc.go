// Package client is the Go client of memindex: what a program that
// searches, reads or publishes needs, and nothing more. It builds with
// CGO_ENABLED=0.
//
// It owns:
//
//   - Client (client.go): Search, Read, Status and Health over the NATS
//     micro service "memindex"; once it knows the stream's partition count
//     (UsePartitions, or learnt from Status) it sends a search or read to
//     memindex.psearch.<p>.<ns> / memindex.pread.<p>.<ns>, the holders of
//     the namespace's partition, and asks again on the routed subject when
//     that goes unanswered.
//   - Publish (publish.go): an event, validated as a worker would, on its
//     namespace's event subject through JetStream, with the Nats-Msg-Id
//     header `memindex publish` sets (MsgID), so publishing it again
//     stores nothing. PublishLines (lines.go): a JSONL stream of events,
//     optionally with valid message lines of a session sent as one
//     messages event, other sessions' lines between them or not; Grouper
//     (group.go) makes those events, for the importer too.
//   - Errors (errors.go): RemoteError, an error reply with its wire code,
//     message and Retry-After, unwrapping to the root package's sentinels
//     (memindex.ErrInvalid, ErrNotOwned, ErrTooLarge, ErrOverloaded,
//     ErrUnavailable); ErrNoWorker, ErrNoBackend, ErrUnsupported.
//   - Manager (manager.go): Open returns one over a backend: remote (the
//     workers, through Client: remote.go), qmd (the QMD tool run as a
//     subprocess: qmd.go says the command line and JSON fields relied on),
//     none, or local through LocalConfig.Opener. With a fallback
//     configured, fallback.go serves from the primary behind a circuit
//     breaker and, when it fails, from a fallback opened on first need;
//     every answer and status says which backend answered and why not the
//     other. Cache (cache.go) shares managers by a key-order-independent
//     hash of their configuration and evicts one whose primary failed.
//     Choice (choice.go) is a search's backend and fallback by name, as
//     `memindex search --backend --fallback --local` gives them: its Config,
//     and Search, which falls back at once when NATS cannot be reached.
//   - Cluster (cluster.go): the workers' statuses as partitions with
//     their owner, replicas and lag, the view `memindex status` prints.
//
// It must not import memindex/store, consumer, embedder, query or chunker,
// nor anything that needs cgo (TestBuildsWithoutCgo runs `go list -deps`
// and `go build` of it with CGO_ENABLED=0): a program that only searches
// must not compile SQLite, sqlite-vec or the Chinese dictionary. So the
// local backend, which reads shard files, is not here: query.Local opens
// it, given as LocalConfig.Opener. It must not write shards, consume
// events or map errors to wire codes (the service does that, in package
// query); the wire and domain types it speaks are the root package's.
package client
