// Package store owns SQLite: one *Shard is one SQLite file that holds one
// partition of the namespace space (any number of namespaces).
//
// It owns opening a shard and verifying what it relies on (WAL read back,
// busy_timeout, foreign keys, FTS5, sqlite-vec), the embedded versioned
// migrations, the schema (messages, chunks, an FTS5 external-content index
// over chunks, a sqlite-vec vec0 table of chunk vectors, a meta table with the
// applied stream sequence and the vector dimension), the transactional Apply of
// one batch, keyword search (FTS5 BM25), vector search (an exact in-memory
// cosine scan backed by the durable vec0 table), hydration of hits, and the
// embedding cache in its own SQLite file.
//
// Invariants:
//   - One Apply is one transaction: rows, FTS rows, vectors and the applied
//     sequence commit together or not at all, and readers (WAL) never see
//     half a batch. The applied sequence never goes backwards.
//   - One writer connection per shard; readers use a separate pool.
//   - Every search is confined to exactly one namespace: a chunk of another
//     namespace is never returned, however similar the names.
//   - Vectors are stored as float32 little-endian BLOBs, never JSON; vec0 is
//     queried in its own statement and metadata is joined afterwards.
//
// It must not import NATS, the embedder, the chunker or the query package, and
// it never logs or prints: errors are returned, wrapped once per layer.
package store
