package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A shard written before migration 0010 (chunks.id UNIQUE, an index of
// random content hashes) keeps every chunk through the table's rebuild,
// with the rowids its FTS rows and vectors are keyed by, and the rebuilt
// table has the other four indexes and no index of ids.
func TestMigrationDropsTheChunkIDIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	db := migratedTo(t, path, 9)
	if got := chunkIndexes(t, db); !slices.Contains(got, "sqlite_autoindex_chunks_1") {
		t.Fatalf("indexes of chunks before 0010 = %v, want the UNIQUE id's", got)
	}
	var vec0 int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'vec_chunks'`).Scan(&vec0); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(101, 102))
	type stored struct {
		id, text string
		vec      []float32
	}
	byRow := map[int64]stored{}
	for _, key := range []string{"a", "b"} {
		res, err := db.Exec(`INSERT INTO sessions(namespace, session_key, session_id) VALUES ('n', ?, 's')`, key)
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := res.LastInsertId()
		for seq := 1; seq <= 6; seq++ {
			id := fmt.Sprintf("c-%s-%d", key, seq)
			text := fmt.Sprintf("%s says word%d", key, seq)
			if _, err := db.Exec(`INSERT INTO messages(sid, namespace, session_key, session_id, seq, id, role, speaker, text, ts)
				VALUES (?, 'n', ?, 's', ?, ?, 'user', 'Ana', ?, 1000)`, sid, key, seq, "m-"+id, text); err != nil {
				t.Fatal(err)
			}
			res, err := db.Exec(`INSERT INTO chunks(sid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, context, fts_ver, has_vector)
				VALUES (?, ?, 'n', 'sessions', ?, 's', ?, ?, 0, ?, '', 0, ?)`, sid, id, key, seq, seq, text, vec0)
			if err != nil {
				t.Fatal(err)
			}
			row, _ := res.LastInsertId()
			if _, err := db.Exec(`INSERT INTO chunks_fts(rowid, fts_body, ns, fts_words, fts_ctx, sk) VALUES (?, ?, ?, NULL, '', ?)`,
				row, text, nsToken("n"), skToken(key)); err != nil {
				t.Fatal(err)
			}
			st := stored{id: id, text: text}
			if vec0 == 1 {
				st.vec = randVec(r, testDims)
				js, _ := json.Marshal(st.vec)
				if _, err := db.Exec(`INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)`, row, string(js)); err != nil {
					t.Fatal(err)
				}
			}
			byRow[row] = st
		}
	}
	// A gap in the rowids, as deletions leave: the rebuild must not close it.
	execAll(t, db, `INSERT INTO chunks_fts(chunks_fts, rowid, fts_body, ns, fts_words, fts_ctx, sk)
		SELECT 'delete', rowid, fts_body, ns, fts_words, fts_ctx, sk FROM chunks WHERE rowid = 3`)
	execAll(t, db, `DELETE FROM chunks WHERE rowid = 3`)
	if vec0 == 1 {
		execAll(t, db, `DELETE FROM vec_chunks WHERE rowid = 3`)
	}
	delete(byRow, 3)
	db.Close()

	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open a shard from before 0010: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	want := []string{"chunks_cjk", "chunks_path", "chunks_pending", "chunks_session"}
	if got := chunkIndexes(t, s.r); !slices.Equal(got, want) {
		t.Errorf("indexes of chunks after 0010 = %v, want %v", got, want)
	}
	mustCheck(t, s)
	integrity(t, s)
	for row, st := range byRow {
		recs, err := s.Chunks(ctx, []ChunkRef{{ID: st.id, Row: row}})
		if err != nil {
			t.Fatal(err)
		}
		if rec, ok := recs[st.id]; !ok || rec.Text != st.text || rec.Message == nil || rec.Message.Text != st.text {
			t.Fatalf("chunk %s at row %d after 0010 = %+v (found %v)", st.id, row, rec, ok)
		}
		kw, err := s.KeywordSearch(ctx, "n", st.text, Filter{SessionKey: st.id[2:3]}, 1)
		if err != nil || len(kw) != 1 || kw[0].ID != st.id || kw[0].Row != row {
			t.Fatalf("KeywordSearch(%q) = %+v, %v, want %s at row %d", st.text, kw, err, st.id, row)
		}
		if st.vec != nil {
			vs, err := s.VectorSearch(ctx, "n", st.vec, Filter{}, 1)
			if err != nil || len(vs) != 1 || vs[0].ID != st.id || vs[0].Row != row {
				t.Fatalf("VectorSearch(vector of %s) = %+v, %v, want it at row %d", st.id, vs, err, row)
			}
		}
	}
	// The writer goes on after the rebuild: a session's tail re-chunked.
	_, sc := session("n", "a", "s", 8, r, testDims)
	sc.From = 6
	sc.Chunks = sc.Chunks[6:]
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	if got := countRows(t, s, "chunks"); got != len(byRow)+1 {
		t.Errorf("chunks after a rechunk from seq 6 = %d, want %d", got, len(byRow)+1)
	}
	mustCheck(t, s)
	integrity(t, s)
}

// chunkIndexes lists the indexes of chunks, by name.
func chunkIndexes(t *testing.T, db queryer) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'chunks' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	return out
}

// Check finds a chunk id stored twice, which no index prevents any more.
func TestCheckFindsAChunkIDStoredTwice(t *testing.T) {
	s := openTest(t, testDims)
	_, sc := session("n", "k", "s", 3, nil, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	mustCheck(t, s)
	execAll(t, s.w, `INSERT INTO chunks(sid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, context, fts_ver)
		SELECT sid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, context, fts_ver FROM chunks WHERE rowid = 1`,
		`INSERT INTO chunks_fts(rowid, fts_body, ns, fts_words, sk)
		SELECT rowid, fts_body, ns, fts_words, sk FROM chunks WHERE rowid = (SELECT max(rowid) FROM chunks)`)
	if err := s.Check(context.Background()); !errorsIs(err, ErrInconsistent) || !strings.Contains(err.Error(), "1 chunk ids stored more than once") {
		t.Fatalf("Check() with a chunk stored twice = %v, want ErrInconsistent naming it", err)
	}
}

// Apply finds a stored chunk of a new chunk's id only in the tail it
// replaces (from From on), so a chunk before From, which could be stored
// already, fails the batch instead of being stored twice.
func TestRechunkRefusesAChunkBeforeFrom(t *testing.T) {
	s := openTest(t, testDims)
	_, sc := session("n", "k", "s", 4, nil, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	again := SessionChunks{Session: sc.Session, From: 2, Chunks: sc.Chunks[1:]}
	if _, err := s.Apply(context.Background(), Batch{Rechunk: []SessionChunks{again}}); err == nil || !strings.Contains(err.Error(), "before From 2") {
		t.Fatalf("Apply(a chunk at seq 1, From 2) = %v, want it refused", err)
	}
	mustCheck(t, s)
	if got := countRows(t, s, "chunks"); got != 4 {
		t.Errorf("chunks after the refused batch = %d, want 4", got)
	}
}
