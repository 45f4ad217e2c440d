package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestVec0BulkWritesWhatVec0Writes applies the same batches to two shards,
// one writing every vector with vec0's INSERT and one with flushVectors,
// and requires the same rows in every vec0 shadow table and in
// sqlite_sequence after each batch, and the same vec0 KNN answers. The
// batches take each path: the first chunk (made by vec0), a chunk's free
// slots filled by vec0 (fewer than vec0FillMin) and by rewriting its BLOBs
// (more, gaps left by deletes included), whole chunks written in bulk and a last one
// partly filled, vectors freed by deleted sessions and re-chunked tails
// (their slots reused), a record replaced twice in one batch (a queued
// vector deleted in its own transaction), vectors set later by
// SetVectors, and batches of exactly a chunk and of one vector.
func TestVec0BulkWritesWhatVec0Writes(t *testing.T) {
	ctx := context.Background()
	const dims = 8
	ref, bulk := openTest(t, dims), openTest(t, dims)
	if mode, _ := bulk.VectorMode(); mode != VectorModeSqliteVec || bulk.ws.bulk == nil {
		t.Fatalf("the shard does not write vectors in bulk (mode %s): is sqlite-vec still %s? After an upgrade, compare vec0bulk.go with its vec0 INSERT and update vec0BulkVersion", mode, vec0BulkVersion)
	}
	ref.ws.bulk.close()
	ref.ws.bulk = nil

	r := rand.New(rand.NewPCG(7, 8))
	seq := uint64(0)
	sessionBatch := func(ns string, sessions, per int) Batch {
		seq++
		b := Batch{Seq: seq}
		for i := range sessions {
			msgs, sc := session(ns, fmt.Sprintf("k%d", i), fmt.Sprintf("s%d", seq), per, r, dims)
			b.Messages = append(b.Messages, msgs...)
			b.Rechunk = append(b.Rechunk, sc)
		}
		return b
	}
	record := func(id, text string) RecordUpsert {
		return RecordUpsert{Chunk: Chunk{ID: fmt.Sprintf("rec-%s-%d", text, seq), Namespace: "n", Path: id, Text: text, Vector: randVec(r, dims)}}
	}
	var batches []Batch
	batches = append(batches, sessionBatch("n", 3, 100)) // 300: the first chunk by vec0, one in bulk
	b := sessionBatch("n", 6, 100)                       // 600 after deleting sessions of both chunks
	b.DeleteSessions = []SessionRef{{"n", "k0", "s1"}, {"n", "k2", "s1"}}
	batches = append(batches, b)
	batches = append(batches, sessionBatch("m", 1, 1))
	b = sessionBatch("n", 1, 256)
	seq++
	b.Seq = seq
	b.Records = []RecordUpsert{record("r1", "first"), record("r1", "second"), record("r2", "other")}
	batches = append(batches, b)
	// A re-chunked tail: the session's chunks from 50 on are replaced.
	tail := batches[1].Rechunk[3]
	tail.From = 50
	tail.Chunks = slices.Clone(tail.Chunks[50:60])
	for i := range tail.Chunks {
		tail.Chunks[i].ID += "-again"
		tail.Chunks[i].Vector = randVec(r, dims)
	}
	seq++
	batches = append(batches, Batch{Seq: seq, Rechunk: []SessionChunks{tail}})
	// Chunks stored without vectors, given theirs later by SetVectors.
	b = sessionBatch("p", 2, 300)
	var later []ChunkVector
	for i := range b.Rechunk {
		for j := range b.Rechunk[i].Chunks {
			c := &b.Rechunk[i].Chunks[j]
			if j%3 != 0 {
				later = append(later, ChunkVector{ID: c.ID, Vector: c.Vector})
				c.Vector = nil
			}
		}
	}
	batches = append(batches, b)

	for i, b := range batches {
		mustApply(t, ref, b)
		mustApply(t, bulk, b)
		sameVec0Tables(t, fmt.Sprintf("after batch %d", i+1), ref, bulk)
	}
	for _, s := range []*Shard{ref, bulk} {
		if _, err := setVectorsByID(t, s, later); err != nil {
			t.Fatal(err)
		}
	}
	sameVec0Tables(t, "after SetVectors", ref, bulk)
	var chunks int
	if err := bulk.r.QueryRowContext(ctx, `SELECT count(*) FROM vec_chunks_chunks`).Scan(&chunks); err != nil || chunks < 6 {
		t.Fatalf("%d vec0 chunks (%v): the batches did not fill enough chunks to test", chunks, err)
	}

	for range 5 {
		q := encodeVector(nil, randVec(r, dims))
		knn := func(s *Shard) [][]any {
			rows, err := s.r.QueryContext(ctx, `SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = 25`, q)
			if err != nil {
				t.Fatal(err)
			}
			return scanAll(t, rows)
		}
		if a, b := knn(ref), knn(bulk); !reflect.DeepEqual(a, b) || len(a) != 25 {
			t.Fatalf("vec0 KNN: %d hits by vec0's inserts, %d in bulk, or they differ:\n%v\n%v", len(a), len(b), a, b)
		}
	}
}

// sameVec0Tables fails unless a and b hold the same rows in vec0's shadow
// tables and the same sqlite_sequence.
func sameVec0Tables(t *testing.T, when string, a, b *Shard) {
	t.Helper()
	for _, q := range []string{
		`SELECT chunk_id, size, validity, rowids FROM vec_chunks_chunks ORDER BY chunk_id`,
		`SELECT rowid, id, chunk_id, chunk_offset FROM vec_chunks_rowids ORDER BY rowid`,
		`SELECT rowid, vectors FROM vec_chunks_vector_chunks00 ORDER BY rowid`,
		`SELECT name, seq FROM sqlite_sequence WHERE name LIKE 'vec_chunks%' ORDER BY name`,
		`SELECT key, value FROM vec_chunks_info ORDER BY key`,
	} {
		ra, err := a.r.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.r.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		ga, gb := scanAll(t, ra), scanAll(t, rb)
		if !reflect.DeepEqual(ga, gb) {
			n := min(len(ga), len(gb))
			for i := range n {
				if !reflect.DeepEqual(ga[i], gb[i]) {
					t.Fatalf("%s, %s: row %d differs:\nvec0: %v\nbulk: %v", when, q, i, ga[i], gb[i])
				}
			}
			t.Fatalf("%s, %s: %d rows by vec0, %d in bulk", when, q, len(ga), len(gb))
		}
	}
}

// scanAll reads every row.
func scanAll(t *testing.T, rows *sql.Rows) [][]any {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
