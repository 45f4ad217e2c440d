package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// vec0's INSERT writes one vector with about a dozen steps: a _rowids row,
// a query for the latest chunk and a read of its validity bitmap, three
// BLOB handles opened and written (validity, vectors, rowids) and an
// UPDATE of the _rowids row. That was about 12 µs of a hot namespace's
// 50 µs rechunk stage a message (BenchmarkApplyHotNamespace with and
// without vectors). A batch's vectors are instead queued by the writer
// and written at once (flushVectors): the free slots of the latest chunk
// by vec0's own INSERT, as before, and the rest as whole new chunks
// written straight into vec0's shadow tables, with exactly the rows vec0
// would have written (TestVec0BulkWritesWhatVec0Writes compares every
// shadow row after the same inserts and deletes either way). When many
// vectors go into the latest chunk's free slots (vec0FillMin or more),
// they too are written at once: the chunk's three BLOBs read, patched at
// the slots vec0 would take and written back. Only the
// sqlite-vec release that test ran against is written this way; with any
// other every vector goes through vec0's INSERT.
const vec0BulkVersion = "v0.1.6"

// vec0FillMin is the fewest vectors going into the latest chunk's free
// slots that are written by rewriting its BLOBs rather than one by one
// with vec0's INSERT: the rewrite costs a chunk's worth of pages however
// few slots it fills (a 256-slot chunk of 384 dims is 384 KiB), an INSERT
// about 12 µs a vector.
const vec0FillMin = 32

const (
	sqlVec0Latest     = `SELECT chunk_id, size, validity, rowids FROM vec_chunks_chunks ORDER BY chunk_id DESC LIMIT 1`
	sqlVec0InsChunk   = `INSERT INTO vec_chunks_chunks(size, validity, rowids) VALUES (?, ?, ?)`
	sqlVec0InsVectors = `INSERT INTO vec_chunks_vector_chunks00(rowid, vectors) VALUES (?, ?)`
	sqlVec0InsRowid   = `INSERT INTO vec_chunks_rowids(rowid, id, chunk_id, chunk_offset) VALUES (?, NULL, ?, ?)`
	sqlVec0Vectors    = `SELECT vectors FROM vec_chunks_vector_chunks00 WHERE rowid = ?`
	sqlVec0SetChunk   = `UPDATE vec_chunks_chunks SET validity = ?, rowids = ? WHERE chunk_id = ?`
	sqlVec0SetVectors = `UPDATE vec_chunks_vector_chunks00 SET vectors = ? WHERE rowid = ?`
)

// vec0Bulk holds the statements that write vec_chunks' shadow tables but
// vec_chunks_rowids, whose rows (one a vector) the writer runs through
// rowExec (rxVec0Rowid).
type vec0Bulk struct {
	latest, insChunk, insVectors, vectors, setChunk, setVectors *sql.Stmt
}

// prepareVec0Bulk prepares them, or returns nil when this sqlite-vec is
// not the release they were checked against or the shadow tables do not
// have the columns they write (the writer then uses vec0's INSERT).
func prepareVec0Bulk(ctx context.Context, db *sql.DB) *vec0Bulk {
	var v string
	if err := db.QueryRowContext(ctx, `SELECT vec_version()`).Scan(&v); err != nil || v != vec0BulkVersion {
		return nil
	}
	// vec_chunks_rowids must have the columns rowExec writes: checked by
	// preparing its statement once.
	st, err := db.PrepareContext(ctx, sqlVec0InsRowid)
	if err != nil {
		return nil
	}
	st.Close()
	b := &vec0Bulk{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{{&b.latest, sqlVec0Latest}, {&b.insChunk, sqlVec0InsChunk}, {&b.insVectors, sqlVec0InsVectors},
		{&b.vectors, sqlVec0Vectors}, {&b.setChunk, sqlVec0SetChunk}, {&b.setVectors, sqlVec0SetVectors}} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			b.close()
			return nil
		}
		*p.dst = st
	}
	return b
}

func (b *vec0Bulk) close() {
	if b == nil {
		return
	}
	for _, st := range []*sql.Stmt{b.latest, b.insChunk, b.insVectors, b.vectors, b.setChunk, b.setVectors} {
		if st != nil {
			st.Close()
		}
	}
}

// queuedVector is a vector the writer has yet to write.
type queuedVector struct {
	rowid int64
	vec   []float32
}

// flushVectors writes the queued vectors as vec0 would, in queue order:
// each fills the first free slot of the latest chunk, and a new chunk is
// made when it has none. It reads the latest chunk at most twice: once,
// and once more after its free slots were filled (or vec0 made the first
// chunk); new chunks it writes itself. It must run before anything reads
// or deletes a vector of the transaction, and before the commit.
func (w *writer) flushVectors() error {
	q := w.vecQueue
	w.vecQueue = w.vecQueue[:0]
	for len(q) > 0 {
		var chunkID, size int64
		var validity, rowids []byte
		err := w.st(w.ws.bulk.latest).QueryRowContext(w.ctx).Scan(&chunkID, &size, &validity, &rowids)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("vec insert: latest chunk: %w", err)
		}
		free := 0
		for _, b := range validity {
			free += 8 - bits.OnesCount8(b)
		}
		if err != nil || size <= 0 || size%8 != 0 || int64(len(validity)) != size/8 || (free > 0 && int64(len(rowids)) != size*8) {
			// vec0 makes the first chunk (or reads a chunk this code does
			// not know) itself.
			if err := w.insertVec0(q[0]); err != nil {
				return err
			}
			q = q[1:]
			continue
		}
		if free > 0 {
			n := min(free, len(q))
			if n < vec0FillMin {
				for _, v := range q[:n] {
					if err := w.insertVec0(v); err != nil {
						return err
					}
				}
			} else if err := w.fillVec0Chunk(chunkID, size, validity, rowids, q[:n]); err != nil {
				return fmt.Errorf("vec insert: %w", err)
			}
			q = q[n:]
			continue
		}
		// The latest chunk is full: the rest go in as new chunks of its
		// size, each but the last full in turn.
		for len(q) > 0 {
			n := min(int(size), len(q))
			if err := w.writeVec0Chunk(size, q[:n]); err != nil {
				return fmt.Errorf("vec insert: %w", err)
			}
			q = q[n:]
		}
	}
	return nil
}

// fillVec0Chunk writes vs (no more than the chunk's free slots) into the
// free slots of chunk chunkID in the order vec0's INSERT takes them (the
// lowest first), the chunk's BLOBs written back.
func (w *writer) fillVec0Chunk(chunkID, size int64, validity, rowids []byte, vs []queuedVector) error {
	var vectors []byte
	if err := w.st(w.ws.bulk.vectors).QueryRowContext(w.ctx, chunkID).Scan(&vectors); err != nil {
		return fmt.Errorf("chunk %d vectors: %w", chunkID, err)
	}
	if want := size * int64(w.dims) * 4; int64(len(vectors)) != want {
		return fmt.Errorf("chunk %d holds %d bytes of vectors, want %d", chunkID, len(vectors), want)
	}
	slots := make([]int, 0, len(vs))
	for i := 0; i < int(size) && len(slots) < len(vs); i++ {
		if validity[i/8]&(1<<(i%8)) == 0 {
			slots = append(slots, i)
		}
	}
	if len(slots) != len(vs) {
		return fmt.Errorf("chunk %d has %d free slots for %d vectors", chunkID, len(slots), len(vs))
	}
	if err := w.placeVectors(validity, rowids, vectors, slots, vs); err != nil {
		return err
	}
	b := w.ws.bulk
	if _, err := w.st(b.setChunk).ExecContext(w.ctx, validity, rowids, chunkID); err != nil {
		return err
	}
	if _, err := w.st(b.setVectors).ExecContext(w.ctx, vectors, chunkID); err != nil {
		return err
	}
	return w.insertRowids(chunkID, slots, vs)
}

// insertVec0 writes one vector with vec0's INSERT.
func (w *writer) insertVec0(v queuedVector) error {
	w.buf = encodeVector(w.buf[:0], v.vec)
	if _, err := w.st(w.ws.vecInsert).ExecContext(w.ctx, v.rowid, w.buf); err != nil {
		return fmt.Errorf("vec insert: %w", err)
	}
	return nil
}

// writeVec0Chunk writes vs (at most size) as a new chunk of size slots:
// the rows vec0_new_chunk inserts, with the validity bits, rowids and
// vectors its INSERTs would then write into them, and each vector's
// _rowids row. The vectors' BLOB is built in w.buf (the driver copies
// bound BLOBs).
func (w *writer) writeVec0Chunk(size int64, vs []queuedVector) error {
	validity := make([]byte, size/8)
	rowids := make([]byte, size*8)
	w.buf = slices.Grow(w.buf[:0], int(size)*w.dims*4)[:int(size)*w.dims*4]
	clear(w.buf) // the free slots are zeros, as vec0 makes them
	slots := make([]int, len(vs))
	for i := range slots {
		slots[i] = i
	}
	if err := w.placeVectors(validity, rowids, w.buf, slots, vs); err != nil {
		return err
	}
	b := w.ws.bulk
	res, err := w.st(b.insChunk).ExecContext(w.ctx, size, validity, rowids)
	if err != nil {
		return err
	}
	chunkID, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := w.st(b.insVectors).ExecContext(w.ctx, chunkID, w.buf); err != nil {
		return err
	}
	return w.insertRowids(chunkID, slots, vs)
}

// placeVectors sets slot slots[j] of a chunk's BLOBs to vs[j]: its
// validity bit, its rowid and its vector.
func (w *writer) placeVectors(validity, rowids, vectors []byte, slots []int, vs []queuedVector) error {
	stride := w.dims * 4
	for j, v := range vs {
		if len(v.vec) != w.dims {
			return fmt.Errorf("vector of %d floats, want %d: %w", len(v.vec), w.dims, ErrDims)
		}
		i := slots[j]
		validity[i/8] |= 1 << (i % 8)
		binary.LittleEndian.PutUint64(rowids[i*8:], uint64(v.rowid))
		encodeVector(vectors[i*stride:i*stride], v.vec)
	}
	return nil
}

// insertRowids writes the _rowids row of each of vs, at slots[j] of chunk
// chunkID.
func (w *writer) insertRowids(chunkID int64, slots []int, vs []queuedVector) error {
	if !w.rx.has(rxVec0Rowid) {
		return fmt.Errorf("vec0 bulk: %.40s: statement not prepared", sqlVec0InsRowid)
	}
	for j, v := range vs {
		a := &w.args
		a.reset()
		a.int(v.rowid)
		a.int(chunkID)
		a.int(int64(slots[j]))
		if _, err := w.rx.exec(rxVec0Rowid, a); err != nil {
			return err
		}
	}
	return nil
}
