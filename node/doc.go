// Package node is the running memindex worker: Open starts one from a
// Config (DefaultConfig holds the defaults `memindex serve` shows; Validate
// names the flag of each setting out of range), Run consumes until its
// context ends and then shuts down in reverse order of start, Close undoes
// Open within its context's deadline. Every in-process worker — serve,
// eval, bench and the tests — starts through Open.
//
// It owns the assembly of the worker and what only a running worker does:
//
//   - the data directory's lock (LockData: one node or offline command at
//     a time) and the embedded NATS server, with nkey authentication under
//     Data/auth (auth.go: seeds of mode 0600, never logged);
//   - the embedder stack of every user of a provider (embedder.NewStack with
//     the node's rate limit, breaker, pool and cache: the serving embedder,
//     the previous generation's and Rebuild's);
//   - partition ownership (ownership.go): a static set, or a dynamic group
//     whose consumer.Leaser gains and drops partitions; a partition answers
//     searches only once caught up;
//   - generations (generation.go): a worker started with another embedder
//     than its shards keep serving the old vectors while a new set is built
//     from the stream, and switches each partition over once caught up;
//   - the HTTP endpoints /metrics, /livez and /readyz (http.go, metrics.go:
//     one Prometheus registry per node, gauges read from status at scrape
//     time, no namespace in any label) and the memory budget (memory.go);
//   - snapshots: the periodic loop and the restore of a gained partition
//     (snapshot.go), and the offline commands Snapshot, Rebuild and
//     DropShards on a data directory (offline.go, rebuild.go).
//
// It must not parse flags, read the environment, print, or install
// process-wide handlers: cmd/memindex does that and passes a Config in (the
// one process-wide setting it makes is the Go heap's soft limit of
// Config.MemoryLimit). Its goroutines are owned by the Node and end before
// Run or Close returns; errors name the flag of the setting to change.
package node
