package store

import "database/sql"

// This file exports what `memindex bench` needs to compare the shard's
// vector leg with other layouts on equal terms; production code does not
// use it.

// OpenSQLite opens (creating if needed) a plain SQLite database at path
// through the driver shards use: sqlite-vec loaded on every connection and
// the same per-connection tuning (mmap, temp store). It is for benchmarks
// that store the same vectors in another layout (a bare vec0 table, JSON
// text) next to a shard.
func OpenSQLite(path string) (*sql.DB, error) {
	registerDriver()
	return sql.Open(driverName, dsn(path, "_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000"))
}

// Dot is the inner product the vector scan uses (AVX2+FMA when the build and
// CPU allow it, see DotKind); len(b) must be at least len(a).
func Dot(a, b []float32) float32 { return dot(a, b) }

// DotKind names the inner product Dot runs: "avx2+fma" or "generic".
func DotKind() string { return dotKind }

// EncodeVector appends v as the float32 little-endian BLOB that vec0 and
// the shard store.
func EncodeVector(dst []byte, v []float32) []byte { return encodeVector(dst, v) }
