// Package store owns SQLite: one *Shard is one SQLite file that holds one
// partition of the namespace space (any number of namespaces).
//
// It owns opening a shard and verifying what it relies on (WAL read back,
// busy_timeout, foreign keys, FTS5, sqlite-vec), the embedded versioned
// migrations, the schema (sessions numbered by sid, messages, chunks, an FTS5 external-content index
// over chunks, a sqlite-vec vec0 table of chunk vectors, a meta table with the
// applied stream sequence and the vector dimension), the transactional Apply of
// one batch, keyword search (BM25 as FTS5 computes it, ranked by an in-memory
// keyword index kept in step with chunks_fts, kwindex.go, that ranks term at a
// time with max-score pruning so a search's cost follows the terms that
// decide its top k, kwrank.go), vector search (an in-memory index
// of int8-quantized vectors whose best candidates are rescored with their
// exact float32 vectors read from the durable vec0 table, so the ranking
// and scores are an exact scan's: vecquant.go; VectorSearchTop rescores
// only a head of them and orders the rest by their int8 scores; from
// 50,000 vectors an unfiltered search first narrows the candidates with a
// 1-bit sketch of each vector, vecbits.go, whose recall is measured rather
// than exact),
// hydration of hits, and the
// embedding cache in its own SQLite file.
//
// A shard runs without sqlite-vec too ("go-scan" mode, reported by
// VectorMode): when the extension is missing, disabled (Config.NoSqliteVec)
// or its vec0 table fails to be read or written, vectors are kept in the
// plain table vec_plain and the same in-memory scan serves them (rescoring
// reads vec_plain instead of vec0). A file
// moves its vectors between vec_chunks and vec_plain when it is opened in
// the other mode (meta 'vec_plain' records where they are; vec0's shadow
// tables are read without the extension).
//
// Keyword search finds Chinese, Japanese and Korean words inside longer runs
// of their script (segment.go): Apply gives the FTS index a segmented form
// of a chunk's CJK text (Han runs cut into words and sub-words by the gse
// dictionary segmenter, Kana and Hangul runs with their character bigrams)
// and BuildMatch cuts a query the same way, dropping CJK stop words; text
// without CJK characters is indexed as it is, with porter stemming. The
// shard records the tokenizer version it was indexed with (meta
// 'tokenizer', chunks.fts_ver), and Open re-indexes, in batches, the chunks
// of another version (Config.OnReindex reports progress). Snippets and hits
// always show the chunk's original text.
//
// Snapshots (snapshot.go): Shard.Snapshot and SnapshotFile write a
// consistent copy of a shard with VACUUM INTO (one read transaction, so
// batches keep committing) and describe it (applied sequence, vector space,
// dims, schema and tokenizer versions, counts, SHA-256); VerifySnapshot
// checks a copy before it replaces a shard (digest, integrity_check, FTS5
// integrity-check, the worker's vector space, what it records). Moving the
// file into place is the caller's (consumer.Snapshots).
//
// Invariants:
//   - One Apply is one transaction: rows, FTS rows, vectors and the applied
//     sequence commit together or not at all, and readers (WAL) never see
//     half a batch. The applied sequence never goes backwards.
//   - One writer connection per shard; readers use a separate pool.
//   - Every message and chunk stores the sid of the sessions row of its own
//     namespace, session key and session id (migration 0009); a sessions
//     row lives as long as some message or chunk names it (Check).
//   - A chunk id is stored once (Check), kept so by the chunker's ids (a
//     hash of scope and position) and Apply's order (a tail read before it
//     is replaced; a file's or record's chunks deleted before they are
//     inserted), not by an index (migration 0010). Chunks are read by the
//     rowid a search or PendingVectors found them at, and only while that
//     row still holds their id (ChunkRef).
//   - Every search is confined to exactly one namespace: a chunk of another
//     namespace is never returned, however similar the names.
//   - Vectors are stored as float32 little-endian BLOBs, never JSON; vec0 is
//     queried in its own statement and metadata is joined afterwards.
//   - vec_chunks holds exactly the rows vec0's own INSERTs would have
//     written: a batch's vectors are queued and, with the sqlite-vec
//     release that was checked, written as whole chunks straight into its
//     shadow tables (vec0bulk.go), before anything of the transaction
//     deletes a vector and before the commit.
//   - After Open every chunk is in the FTS index, indexed from the values
//     stored with it (fts_body, ns, fts_words), which Apply also uses to
//     delete its FTS row: the index always agrees with chunks (Check).
//   - The keyword index holds exactly the rows of chunks_fts, and each
//     row's context besides (fts_ctx, which chunks_fts does not index since
//     migration 0011), tokenized by FTS5's own tokenizer, and ranks a query
//     with the scores FTS5's bm25() gives over those columns or says it
//     cannot (then FTS5 ranks it, without the context); it is changed only
//     after a commit, in commit order.
//   - A chunk flagged with a vector has exactly one, in the table of the
//     shard's vector mode; the other table holds none (a vec_chunks left
//     behind in go-scan is stale and emptied when sqlite-vec returns).
//
// bench_hooks.go exports, for `memindex bench` only, the SQLite driver with
// sqlite-vec (OpenSQLite), the dot product of the scan (Dot) and the vector
// BLOB encoding, so other layouts can be compared with a shard on equal terms.
//
// The WAL is checkpointed by a goroutine with a connection of its own that
// the writer kicks after each commit (checkpoint.go); the writer's own
// automatic checkpoint only bounds the WAL (walValveBytes) should that
// goroutine fall behind. A shard file Open creates has 16 KiB pages
// (pagesize.go: a quarter of the WAL frames, each its own system calls);
// a file created before keeps its page size.
//
// The writer's statements of every message run through rowExec
// (rowexec.go): prepared by SQLite on the writer's connection, found
// through the SQL function memindex_conn_handle(), and bound, stepped and
// reset in one cgo call, not through database/sql. SQLite runs without its
// memory statistics and its connections without their own mutexes
// (sqliteconfig.go): database/sql never shares a connection between
// goroutines.
//
// CheckFile (integrity.go) checks a shard file without opening it as a
// Shard: PRAGMA integrity_check and, unless read-only, FTS5's
// integrity-check (for `memindex doctor`).
//
// It must not import NATS, the embedder, the chunker or the query package, and
// it never logs or prints: errors are returned, wrapped once per layer.
package store
