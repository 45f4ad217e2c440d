package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/store"
)

// The vector suite's data files (the shard, a bare vec0 table, JSON
// vectors in a plain table: vector.go caches them) and its four variants,
// each loaded from them or from the flat vectors.

// buildVectorFiles writes the three files of dir from data unless a
// previous run finished them for the same size, seed and layout.
func buildVectorFiles(ctx context.Context, cfg VectorConfig, dir string, size int, data []float32) error {
	marker := filepath.Join(dir, "READY")
	want := fmt.Sprintf("%s size=%d seed=%d dims=%d\n", vecDataVersion, size, cfg.Seed, vecDims)
	if cfg.Data != vecDataRandom {
		want = fmt.Sprintf("%s data=%s size=%d seed=%d dims=%d\n", vecDataVersion, cfg.Data, size, cfg.Seed, vecDims)
	}
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		cfg.Log("  %d vectors: reusing %s", size, dir)
		return nil
	}
	os.Remove(marker)
	for _, name := range []string{"memindex.db", "vec0.db", "json.db"} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(dir, name+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	steps := []struct {
		name  string
		build func(context.Context, string, int, []float32) error
	}{
		{"memindex shard", buildShardFile},
		{"vec0 table", buildVec0File},
		{"JSON table", buildJSONFile},
	}
	for _, st := range steps {
		t := time.Now()
		if err := st.build(ctx, dir, size, data); err != nil {
			return fmt.Errorf("build %s: %w", st.name, err)
		}
		cfg.Log("  %d vectors: built the %s in %.1fs", size, st.name, time.Since(t).Seconds())
	}
	return os.WriteFile(marker, []byte(want), 0o644)
}

// buildShardFile stores each vector as one chunk of a shard (sqlite-vec
// mode), through Apply as the worker does, in batches of 2,000 chunks.
func buildShardFile(ctx context.Context, dir string, size int, data []float32) error {
	sh, err := store.Open(ctx, filepath.Join(dir, "memindex.db"), store.Config{Dims: vecDims})
	if err != nil {
		return err
	}
	const per = 2000
	ts := time.Unix(1_700_000_000, 0)
	for off, b := 0, 0; off < size; off, b = off+per, b+1 {
		ref := store.SessionRef{Namespace: vecNamespace, SessionKey: "bench", SessionID: strconv.Itoa(b)}
		sc := store.SessionChunks{Session: ref}
		for i := off; i < min(off+per, size); i++ {
			id := strconv.Itoa(i + 1)
			sc.Chunks = append(sc.Chunks, store.Chunk{ID: id, Namespace: vecNamespace, Source: memindex.SourceSessions,
				SessionKey: ref.SessionKey, SessionID: ref.SessionID, SeqStart: int64(i), SeqEnd: int64(i),
				Text: "v" + id, TimeStart: ts, TimeEnd: ts, Vector: data[i*vecDims : (i+1)*vecDims]})
		}
		if _, err := sh.Apply(ctx, store.Batch{Seq: uint64(b + 1), Rechunk: []store.SessionChunks{sc}}); err != nil {
			sh.Close(ctx)
			return err
		}
	}
	return sh.Close(ctx) // checkpoints the WAL into the file
}

// buildVec0File stores the vectors in a bare vec0 table (rowid = row
// number, cosine distance), in transactions of 10,000 rows.
func buildVec0File(ctx context.Context, dir string, size int, data []float32) error {
	return fillTable(ctx, filepath.Join(dir, "vec0.db"),
		fmt.Sprintf(`CREATE VIRTUAL TABLE vecs USING vec0(embedding float[%d] distance_metric=cosine)`, vecDims),
		`INSERT INTO vecs(rowid, embedding) VALUES (?, ?)`, size,
		func(i int, buf []byte) ([]byte, any) {
			buf = store.EncodeVector(buf[:0], data[i*vecDims:(i+1)*vecDims])
			return buf, buf
		})
}

// buildJSONFile stores the vectors as JSON arrays (encoding/json's text of
// []float32) in a plain table: the naive layout.
func buildJSONFile(ctx context.Context, dir string, size int, data []float32) error {
	return fillTable(ctx, filepath.Join(dir, "json.db"),
		`CREATE TABLE vecs(id INTEGER PRIMARY KEY, embedding TEXT NOT NULL)`,
		`INSERT INTO vecs(id, embedding) VALUES (?, ?)`, size,
		func(i int, _ []byte) ([]byte, any) {
			b, _ := json.Marshal(data[i*vecDims : (i+1)*vecDims])
			return nil, string(b)
		})
}

// fillTable creates path with create and inserts size rows with insert
// (id i+1, the value row gives).
func fillTable(ctx context.Context, path, create, insert string, size int, row func(i int, buf []byte) ([]byte, any)) error {
	db, err := store.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, create); err != nil {
		return err
	}
	var buf []byte
	const per = 10000
	for off := 0; off < size; off += per {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, insert)
		if err != nil {
			tx.Rollback()
			return err
		}
		for i := off; i < min(off+per, size); i++ {
			var v any
			buf, v = row(i, buf)
			if _, err := st.ExecContext(ctx, i+1, v); err != nil {
				tx.Rollback()
				return err
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// memindexVariant searches a shard opened from the cached file, as the
// query engine's vector leg does (the int8 index loaded at Open, the best
// candidates rescored with their float32 vectors from vec0).
func memindexVariant(dir string, size int) *vecVariant {
	v := &vecVariant{name: VariantMemindex, path: filepath.Join(dir, "memindex.db"), threads: scanThreads(size)}
	var sh *store.Shard
	v.load = func(ctx context.Context) error {
		var err error
		sh, err = store.Open(ctx, v.path, store.Config{Dims: vecDims})
		return err
	}
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		cs, err := sh.VectorSearch(ctx, vecNamespace, q, store.Filter{}, vecK)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(cs))
		for i, c := range cs {
			if ids[i], err = strconv.ParseInt(c.ID, 10, 64); err != nil {
				return nil, fmt.Errorf("chunk id %q: %w", c.ID, err)
			}
		}
		return ids, nil
	}
	v.close = func() error {
		if sh == nil {
			return nil
		}
		return sh.Close(context.Background())
	}
	return v
}

// vec0Variant asks sqlite-vec for the k nearest rows of the whole table.
func vec0Variant(dir string) *vecVariant {
	v := &vecVariant{name: VariantVec0, path: filepath.Join(dir, "vec0.db"), threads: 1}
	var db *sql.DB
	var st *sql.Stmt
	v.load = func(ctx context.Context) error {
		var err error
		if db, err = store.OpenSQLite(v.path); err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		st, err = db.PrepareContext(ctx, `SELECT rowid, distance FROM vecs WHERE embedding MATCH ? AND k = ? ORDER BY distance`)
		return err
	}
	var buf []byte
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		buf = store.EncodeVector(buf[:0], q)
		rows, err := st.QueryContext(ctx, buf, vecK)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		ids := make([]int64, 0, vecK)
		for rows.Next() {
			var id int64
			var d float64
			if err := rows.Scan(&id, &d); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, rows.Err()
	}
	v.close = func() error {
		if db == nil {
			return nil
		}
		st.Close()
		return db.Close()
	}
	return v
}

// jsonVariant reads every row's JSON text, decodes it with encoding/json and
// keeps the best vecK by a plain dot-product loop: what an application that
// keeps vectors as JSON does.
func jsonVariant(dir string) *vecVariant {
	v := &vecVariant{name: VariantJSON, path: filepath.Join(dir, "json.db"), threads: 1}
	var db *sql.DB
	v.load = func(ctx context.Context) error {
		var err error
		if db, err = store.OpenSQLite(v.path); err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		return db.PingContext(ctx)
	}
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		rows, err := db.QueryContext(ctx, `SELECT id, embedding FROM vecs`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var top topN
		vec := make([]float32, 0, vecDims)
		for rows.Next() {
			var id int64
			var text sql.RawBytes
			if err := rows.Scan(&id, &text); err != nil {
				return nil, err
			}
			vec = vec[:0]
			if err := json.Unmarshal(text, &vec); err != nil {
				return nil, fmt.Errorf("row %d: %w", id, err)
			}
			var s float32
			for i, f := range q {
				s += f * vec[i]
			}
			top.push(id, s)
		}
		return top.ids(), rows.Err()
	}
	v.close = func() error {
		if db == nil {
			return nil
		}
		return db.Close()
	}
	return v
}

// goScanVariant scans a flat []float32 with the shard's dot product, split
// across GOMAXPROCS goroutines as the shard's index is from 20,000 vectors.
func goScanVariant(data []float32) *vecVariant {
	n := len(data) / vecDims
	parts := scanThreads(n)
	v := &vecVariant{name: VariantGoScan, threads: parts}
	v.search = func(_ context.Context, q []float32) ([]int64, error) {
		tops := make([]topN, parts)
		step := (n + parts - 1) / parts
		scan := func(p int) {
			t := &tops[p]
			for i := p * step; i < min((p+1)*step, n); i++ {
				t.push(int64(i+1), store.Dot(q, data[i*vecDims:(i+1)*vecDims]))
			}
		}
		if parts == 1 {
			scan(0)
		} else {
			var wg conc.WaitGroup
			for p := range parts {
				wg.Go(func() { scan(p) })
			}
			wg.Wait()
		}
		all := tops[0]
		for _, t := range tops[1:] {
			for i := range t.n {
				all.push(t.id[i], t.score[i])
			}
		}
		return all.ids(), nil
	}
	return v
}

// scanThreads is how many goroutines the shard's index splits a scan of n
// vectors over (store: from 20,000 vectors, GOMAXPROCS).
func scanThreads(n int) int {
	if n < 20000 {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
