package store

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-sqlite3"
)

// shardPageBytes is the SQLite page size of a shard file Open creates:
// 16 KiB, not SQLite's default 4. A batch writes the same bytes in a
// quarter of the WAL frames, and each frame costs system calls of its
// own: its writes at the commit, its read and write at the checkpoint.
// A hot namespace's commit took 3.4 µs a message instead of 7.2–7.6
// (BenchmarkApplyHotNamespace/batch=8000; BENCHMARKS.md, fifteenth
// session); searches at 100,000 chunks did not get slower.
//
// The cost is disk: vec0 keeps 8 vectors in a BLOB of 12 KiB (384 dims),
// which at 4 KiB pages spans a small cell and three overflow pages but at
// 16 KiB takes a leaf page of its own, a quarter of it empty. A hot
// namespace's shard of 100,000 messages was 285 MB against 243 (its
// vectors 205 MB against 160); 8 KiB pages give the same file. A vec0
// chunk_size of 24 packs them again, but a vector read then walks
// overflow pages where a chunk of 8 is one leaf page: searches at
// 1,000,000 chunks were a quarter slower (BENCHMARKS.md), so the disk
// stays the price.
//
// A file created before keeps its page size: SQLite fixes it when the
// file is created, and a database in WAL mode cannot change it.
const shardPageBytes = 16 << 10

// prepareShardFile creates the shard file at path, when it does not exist
// or is empty, with shardPageBytes pages and in WAL mode, and returns the
// page size of the file at path.
func prepareShardFile(path string) (int, error) {
	if n, err := filePageBytes(path); err == nil || !errors.Is(err, errNoDatabase) {
		return n, err
	}
	c, err := (&sqlite3.SQLiteDriver{}).Open(dsn(path, noVecParam))
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", path, err)
	}
	conn := c.(*sqlite3.SQLiteConn)
	n := 0
	_, err = conn.Exec(fmt.Sprintf("PRAGMA page_size = %d; PRAGMA journal_mode = WAL", shardPageBytes), nil)
	if err == nil {
		n, err = connPageBytes(conn) // SQLite's own word for what it made
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", path, err)
	}
	return n, nil
}

// connPageBytes returns the page size of conn's database.
func connPageBytes(conn *sqlite3.SQLiteConn) (int, error) {
	rows, err := conn.Query("PRAGMA page_size", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, fmt.Errorf("page size: %w", err)
	}
	n, ok := v[0].(int64)
	if !ok || n < 512 {
		return 0, fmt.Errorf("page size %v", v[0])
	}
	return int(n), nil
}

// errNoDatabase: the file does not exist or holds no database header yet.
var errNoDatabase = errors.New("no database yet")

// filePageBytes reads the page size from the header of the SQLite file at
// path (bytes 16–17, big-endian; 1 means 65,536).
func filePageBytes(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, errNoDatabase
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errNoDatabase // empty, or shorter than a header
		}
		return 0, fmt.Errorf("read the header of %s: %w", path, err)
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return 0, fmt.Errorf("%s is not an SQLite database: its header does not begin \"SQLite format 3\"", path)
	}
	n := int(binary.BigEndian.Uint16(h[16:18]))
	if n == 1 {
		n = 65536
	}
	if n < 512 || n&(n-1) != 0 {
		return 0, fmt.Errorf("%s: page size %d in its header is not an SQLite page size", path, n)
	}
	return n, nil
}

// PageBytes returns the SQLite page size of the shard file (0 when a
// read-only shard's header could not be read).
func (s *Shard) PageBytes() int { return s.pageBytes }
