package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// SnapshotInfo describes a shard snapshot: what its file records (applied
// stream sequence, vector space and dimension, schema and tokenizer
// versions, chunk and vector counts) and the file's size and SHA-256.
type SnapshotInfo struct {
	// AppliedSeq is the last stream sequence the snapshot holds; a shard
	// restored from it resumes from the sequence after it.
	AppliedSeq uint64 `json:"appliedSeq"`
	// Space is the vector space (embedder provider/model/dims) of the
	// snapshot's vectors; "" when the shard recorded none.
	Space string `json:"space"`
	// Dims is the vector dimension.
	Dims int `json:"dims"`
	// Schema is the highest migration version the file records.
	Schema int `json:"schema"`
	// Tokenizer is the keyword tokenizer version the chunks are indexed with.
	Tokenizer int `json:"tokenizer"`
	// Chunks and Vectors count the chunks and the chunks with a vector.
	Chunks  int64 `json:"chunks"`
	Vectors int64 `json:"vectors"`
	// Size is the file size in bytes; SHA256 its digest, lowercase hex.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Snapshot writes a consistent copy of the shard to path with VACUUM INTO
// and describes it. It reads through a reader connection inside one read
// transaction, so batches keep committing while it runs and the copy holds
// exactly the batches committed when it started (with their applied
// sequence). path must not exist. The copy is a complete shard file (FTS5
// index and vectors included) that Open accepts as it is.
func (s *Shard) Snapshot(ctx context.Context, path string) (SnapshotInfo, error) {
	if err := s.check(); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	if path == "" {
		return SnapshotInfo{}, fmt.Errorf("snapshot: empty path: %w", ErrInvalidConfig)
	}
	if _, err := os.Lstat(path); err == nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %s already exists; VACUUM INTO needs a new file", path)
	}
	// The reader pool is query_only, which refuses VACUUM INTO; a
	// dedicated connection to the same file reads in WAL like the readers.
	if err := vacuumInto(ctx, s.path, path); err != nil {
		_ = os.Remove(path)
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	info, err := describeSnapshot(ctx, path)
	if err != nil {
		_ = os.Remove(path)
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	return info, nil
}

// SnapshotFile is Snapshot of the shard file at src without opening it as a
// Shard: one more WAL reader, so it may run beside the worker (another
// process) that writes src. It checks nothing of src but that it is a
// SQLite database with a shard's meta table.
func SnapshotFile(ctx context.Context, src, path string) (SnapshotInfo, error) {
	if _, err := os.Stat(src); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %s already exists; VACUUM INTO needs a new file", path)
	}
	if err := vacuumInto(ctx, src, path); err != nil {
		_ = os.Remove(path)
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	info, err := describeSnapshot(ctx, path)
	if err != nil {
		_ = os.Remove(path)
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	return info, nil
}

// vacuumInto copies the database at src into the new file dst.
func vacuumInto(ctx context.Context, src, dst string) error {
	registerDriver()
	db, err := sql.Open(driverName, dsn(src, fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS)))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("vacuum into %s: %w", dst, err)
	}
	return nil
}

// describeSnapshot reads what the shard file at path records and digests it.
func describeSnapshot(ctx context.Context, path string) (SnapshotInfo, error) {
	var info SnapshotInfo
	if err := readSnapshotMeta(ctx, path, &info); err != nil {
		return SnapshotInfo{}, err
	}
	size, sum, err := digestFile(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info.Size, info.SHA256 = size, sum
	return info, nil
}

// readSnapshotMeta opens path read-only and fills info's recorded fields.
func readSnapshotMeta(ctx context.Context, path string, info *SnapshotInfo) error {
	registerDriver()
	db, err := sql.Open(driverName, dsn(path, fmt.Sprintf("mode=ro&_busy_timeout=%d", busyTimeoutMS)))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return fmt.Errorf("read meta of %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v any
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("read meta of %s: %w", path, err)
		}
		n, _ := v.(int64)
		switch k {
		case "applied_seq":
			info.AppliedSeq = uint64(n)
		case "dims":
			info.Dims = int(n)
		case "tokenizer":
			info.Tokenizer = int(n)
		case "space":
			if b, ok := v.([]byte); ok {
				info.Space = string(b)
			} else {
				info.Space = fmt.Sprint(v)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read meta of %s: %w", path, err)
	}
	for _, q := range []struct {
		sql string
		dst any
	}{
		{`SELECT ifnull(max(version), 0) FROM schema_migrations`, &info.Schema},
		{`SELECT count(*) FROM chunks`, &info.Chunks},
		{`SELECT count(*) FROM chunks WHERE has_vector = 1`, &info.Vectors},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	return nil
}

// digestFile returns the size and SHA-256 (lowercase hex) of the file at path.
func digestFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("digest %s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// VerifySnapshot checks the snapshot file at path before it replaces a
// shard: its SHA-256 must be want.SHA256 (and its size want.Size, when
// set); SQLite's integrity_check and FTS5's integrity-check must pass; its
// schema must not be newer than this binary's; and what it records must
// match want: AppliedSeq, Dims, Tokenizer and Chunks when they are not
// zero, and Space always when want.Space is set (a snapshot of another
// embedder's vectors is useless to a worker). Set want.Space to the
// worker's current space, not to what the snapshot claims. It returns the
// file's own description, and an error wrapping ErrSnapshot (or ErrSpace,
// ErrSchemaTooNew) that says what differs.
//
// VerifySnapshot runs the FTS5 check, which SQLite treats as a write, so
// path must be a file the caller may modify (a downloaded copy).
func VerifySnapshot(ctx context.Context, path string, want SnapshotInfo) (SnapshotInfo, error) {
	got, err := verifySnapshot(ctx, path, want)
	if err != nil {
		return got, fmt.Errorf("verify snapshot: %w", err)
	}
	return got, nil
}

func verifySnapshot(ctx context.Context, path string, want SnapshotInfo) (SnapshotInfo, error) {
	var got SnapshotInfo
	size, sum, err := digestFile(path)
	if err != nil {
		return got, err
	}
	got.Size, got.SHA256 = size, sum
	if want.SHA256 == "" {
		return got, fmt.Errorf("no digest to verify %s against: %w", path, ErrSnapshot)
	}
	if !strings.EqualFold(sum, want.SHA256) {
		return got, fmt.Errorf("sha256 of %s is %s, want %s (the file is damaged or not this snapshot): %w", path, sum, want.SHA256, ErrSnapshot)
	}
	if want.Size != 0 && size != want.Size {
		return got, fmt.Errorf("%s has %d bytes, want %d: %w", path, size, want.Size, ErrSnapshot)
	}
	if err := checkSnapshotIntegrity(ctx, path); err != nil {
		return got, err
	}
	if err := readSnapshotMeta(ctx, path, &got); err != nil {
		return got, fmt.Errorf("%v: %w", err, ErrSnapshot)
	}
	ms, err := loadMigrations()
	if err != nil {
		return got, err
	}
	if known := ms[len(ms)-1].version; got.Schema > known {
		return got, fmt.Errorf("snapshot has schema version %d, this binary knows up to %d: %w", got.Schema, known, ErrSchemaTooNew)
	}
	if want.Space != "" && got.Space != want.Space {
		return got, fmt.Errorf("snapshot holds vectors of %q, the worker embeds with %q; take a new snapshot or rebuild from the stream: %w", got.Space, want.Space, ErrSpace)
	}
	for _, f := range []struct {
		name      string
		got, want int64
	}{
		{"applied sequence", int64(got.AppliedSeq), int64(want.AppliedSeq)},
		{"dims", int64(got.Dims), int64(want.Dims)},
		{"tokenizer version", int64(got.Tokenizer), int64(want.Tokenizer)},
		{"schema version", int64(got.Schema), int64(want.Schema)},
		{"chunk count", got.Chunks, want.Chunks},
		{"vector count", got.Vectors, want.Vectors},
	} {
		if f.want != 0 && f.got != f.want {
			return got, fmt.Errorf("snapshot records %s %d, its description says %d: %w", f.name, f.got, f.want, ErrSnapshot)
		}
	}
	return got, nil
}

// checkSnapshotIntegrity runs PRAGMA integrity_check and FTS5's
// integrity-check on the file at path.
func checkSnapshotIntegrity(ctx context.Context, path string) error {
	if err := checkFile(ctx, path, CheckFileConfig{}); err != nil {
		return fmt.Errorf("%s: %w: %w", path, err, ErrSnapshot)
	}
	return nil
}
