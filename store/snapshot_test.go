package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sourcegraph/conc"
)

const testSpace = "builtin/test/8"

// fillShard applies sessions, memory files and records (with vectors, and
// a few chunks left waiting for one) in several batches; the last batch has
// stream sequence 7.
func fillShard(tb testing.TB, s *Shard) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	seq := uint64(0)
	for _, ns := range []string{"ana", "bo"} {
		for i, id := range []string{"s1", "s2"} {
			msgs, sc := session(ns, "chat", id, 20+i*5, r, testDims)
			sc.Chunks[3].Vector = nil // waits for the backfill
			seq++
			mustApply(tb, s, Batch{Seq: seq, Messages: msgs, Rechunk: []SessionChunks{sc}})
		}
	}
	var files []FileUpsert
	for i, dir := range []string{"", "/work/a"} {
		f := FileUpsert{Namespace: "ana", Path: fmt.Sprintf("notes%d.md", i), DirPath: dir, Hash: "h", Content: "# notes\nkiwi"}
		for j := range 3 {
			f.Chunks = append(f.Chunks, Chunk{ID: fmt.Sprintf("f%d-%d", i, j), SeqStart: int64(j*5 + 1), SeqEnd: int64(j*5 + 4),
				Text: fmt.Sprintf("kiwi section %d of file %d", j, i), Vector: randVec(r, testDims)})
		}
		files = append(files, f)
	}
	seq++
	mustApply(tb, s, Batch{Seq: seq, Files: files})
	var recs []RecordUpsert
	for i := range 4 {
		recs = append(recs, RecordUpsert{Chunk: Chunk{ID: fmt.Sprintf("r%d", i), Namespace: "bo", Source: "records",
			Path: fmt.Sprintf("rec-%d", i), Text: fmt.Sprintf("bo prefers tea number %d", i), Vector: randVec(r, testDims)}})
	}
	seq++
	mustApply(tb, s, Batch{Seq: seq, Records: recs})
	seq++ // a batch that deletes: the snapshot must not resurrect anything
	mustApply(tb, s, Batch{Seq: seq, DeleteSessions: []SessionRef{{Namespace: "bo", SessionKey: "chat", SessionID: "s1"}}})
}

// chunkVectors returns every chunk id of the shard with its vector's bytes
// (hex; "" for a chunk without one), read from the table the shard keeps
// its vectors in.
func chunkVectors(tb testing.TB, s *Shard) map[string]string {
	tb.Helper()
	ctx := context.Background()
	ids := map[int64]string{}
	rows, err := s.r.QueryContext(ctx, `SELECT rowid, id FROM chunks`)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var rowid int64
		var id string
		if err := rows.Scan(&rowid, &id); err != nil {
			tb.Fatal(err)
		}
		ids[rowid], out[id] = id, ""
	}
	rows.Close()
	table := "vec_chunks"
	if s.vec.Load().plain() {
		table = "vec_plain"
	}
	rows, err = s.r.QueryContext(ctx, `SELECT rowid, embedding FROM `+table)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var rowid int64
		var b []byte
		if err := rows.Scan(&rowid, &b); err != nil {
			tb.Fatal(err)
		}
		id, ok := ids[rowid]
		if !ok {
			tb.Fatalf("%s rowid %d has no chunk", table, rowid)
		}
		out[id] = hex.EncodeToString(b)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func searchIDs(tb testing.TB, s *Shard, ns string, vec []float32) (kw, vs []string) {
	tb.Helper()
	ctx := context.Background()
	k, err := s.KeywordSearch(ctx, ns, "kiwi tea topic1", Filter{}, 20)
	if err != nil {
		tb.Fatalf("KeywordSearch: %v", err)
	}
	v, err := s.VectorSearch(ctx, ns, vec, Filter{}, 20)
	if err != nil {
		tb.Fatalf("VectorSearch: %v", err)
	}
	for _, c := range k {
		kw = append(kw, c.ID)
	}
	for _, c := range v {
		vs = append(vs, c.ID)
	}
	return kw, vs
}

// TestSnapshotRestoreIsIdentical: a snapshot of a shard with sessions,
// files, records and vectors, put in place of the deleted shard, opens with
// every chunk id and vector byte-identical, the same applied sequence, a
// passing Check and the same search results, in both vector modes.
func TestSnapshotRestoreIsIdentical(t *testing.T) {
	for _, mode := range []struct {
		name  string
		noVec bool
	}{{"sqlite-vec", false}, {"go-scan", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p3.db")
			cfg := Config{Dims: testDims, Space: testSpace, NoSqliteVec: mode.noVec}
			s, err := Open(ctx, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			fillShard(t, s)
			wantVecs := chunkVectors(t, s)
			q := randVec(rand.New(rand.NewPCG(9, 9)), testDims)
			wantKW, wantVS := map[string][]string{}, map[string][]string{}
			for _, ns := range []string{"ana", "bo"} {
				wantKW[ns], wantVS[ns] = searchIDs(t, s, ns, q)
			}
			snap := filepath.Join(t.TempDir(), "snap.db")
			info, err := s.Snapshot(ctx, snap)
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			var vectors int64
			for _, v := range wantVecs {
				if v != "" {
					vectors++
				}
			}
			ms, err := loadMigrations()
			if err != nil {
				t.Fatal(err)
			}
			want := SnapshotInfo{AppliedSeq: 7, Space: testSpace, Dims: testDims, Schema: ms[len(ms)-1].version, Tokenizer: tokenizerVersion,
				Chunks: int64(len(wantVecs)), Vectors: vectors, Size: info.Size, SHA256: info.SHA256}
			if info != want || len(info.SHA256) != 64 || info.Size == 0 {
				t.Fatalf("Snapshot()=%+v, want %+v", info, want)
			}
			if _, err := s.Snapshot(ctx, snap); err == nil {
				t.Fatal("Snapshot over an existing file succeeded, want a refusal")
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			got, err := VerifySnapshot(ctx, snap, SnapshotInfo{SHA256: info.SHA256, Space: testSpace, AppliedSeq: 7})
			if err != nil {
				t.Fatalf("VerifySnapshot: %v", err)
			}
			if got != info {
				t.Fatalf("VerifySnapshot()=%+v, want %+v", got, info)
			}
			if err := os.Rename(snap, path); err != nil {
				t.Fatal(err)
			}
			r, err := Open(ctx, path, cfg)
			if err != nil {
				t.Fatalf("Open restored: %v", err)
			}
			defer r.Close(ctx)
			if err := r.Check(ctx); err != nil {
				t.Fatalf("Check restored: %v", err)
			}
			if seq, err := r.AppliedSeq(ctx); err != nil || seq != 7 {
				t.Fatalf("restored AppliedSeq()=%d, %v; want 7", seq, err)
			}
			if gotVecs := chunkVectors(t, r); !reflect.DeepEqual(gotVecs, wantVecs) {
				t.Fatalf("restored chunks and vectors differ: %d chunks, want %d", len(gotVecs), len(wantVecs))
			}
			for _, ns := range []string{"ana", "bo"} {
				kw, vs := searchIDs(t, r, ns, q)
				if !reflect.DeepEqual(kw, wantKW[ns]) || !reflect.DeepEqual(vs, wantVS[ns]) {
					t.Fatalf("%s: restored searches keyword %v vector %v, want %v %v", ns, kw, vs, wantKW[ns], wantVS[ns])
				}
			}
			if mode, _ := r.VectorMode(); (mode == VectorModeGoScan) != cfg.NoSqliteVec {
				t.Fatalf("restored VectorMode()=%s", mode)
			}
		})
	}
}

// TestVerifySnapshotRefuses: a damaged file, a digest of another file,
// another vector space and a description that disagrees with the file are
// each refused with an error that says so.
func TestVerifySnapshotRefuses(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p0.db"), Config{Dims: testDims, Space: testSpace})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	fillShard(t, s)
	snap := filepath.Join(t.TempDir(), "snap.db")
	info, err := s.Snapshot(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	// flipped damages a page in the middle of the file and describes the
	// damaged file truthfully (its own digest), so only the integrity
	// checks can catch it.
	flipped := func(t *testing.T, path string) SnapshotInfo {
		b := append([]byte(nil), orig...)
		// Damage the second half of the file, page by page (4 KiB pages),
		// away from the schema on the first pages.
		for off := len(b) / 2; off+200 < len(b); off += 4096 {
			b[off+100] ^= 0xff
			b[off+200] ^= 0xff
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, sum, err := digestFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return SnapshotInfo{SHA256: sum}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string) SnapshotInfo
		wantErr error
		wantMsg string
	}{
		{"a flipped byte fails the digest", func(t *testing.T, path string) SnapshotInfo {
			flipped(t, path)
			return info
		}, ErrSnapshot, "sha256"},
		{"no digest", func(t *testing.T, path string) SnapshotInfo {
			return SnapshotInfo{Space: testSpace}
		}, ErrSnapshot, "no digest"},
		{"another space", func(t *testing.T, path string) SnapshotInfo {
			w := info
			w.Space = "openai/text-embedding-3-small/8"
			return w
		}, ErrSpace, "openai/text-embedding-3-small/8"},
		{"another applied sequence", func(t *testing.T, path string) SnapshotInfo {
			w := info
			w.AppliedSeq = 99
			return w
		}, ErrSnapshot, "applied sequence 7"},
		{"another size", func(t *testing.T, path string) SnapshotInfo {
			w := info
			w.Size++
			return w
		}, ErrSnapshot, "bytes"},
		{"damaged pages with a matching digest fail the integrity check", flipped, ErrSnapshot, "integrity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap.db")
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			want := tt.prepare(t, path)
			_, err := VerifySnapshot(ctx, path, want)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("VerifySnapshot()=%v, want %v mentioning %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

// TestSnapshotWhileApplying: a snapshot taken while batches commit holds
// exactly the batches up to its applied sequence.
func TestSnapshotWhileApplying(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p0.db"), Config{Dims: testDims, Space: testSpace})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	r := rand.New(rand.NewPCG(3, 4))
	batch := func(i int) Batch {
		msgs, sc := session("ana", "chat", fmt.Sprintf("s%d", i), 1, r, testDims)
		return Batch{Seq: uint64(i), Messages: msgs, Rechunk: []SessionChunks{sc}}
	}
	for i := 1; i <= 50; i++ {
		mustApply(t, s, batch(i))
	}
	var wg conc.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 51; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Apply(ctx, batch(i)); err != nil {
				t.Errorf("Apply %d: %v", i, err)
				return
			}
		}
	})
	var infos []SnapshotInfo
	for i := range 3 {
		info, err := s.Snapshot(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("snap%d.db", i)))
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("Snapshot: %v", err)
		}
		infos = append(infos, info)
	}
	close(stop)
	wg.Wait()
	for _, info := range infos {
		// One chunk per batch: a consistent copy has as many chunks as
		// batches it says it applied.
		if info.AppliedSeq < 50 || info.Chunks != int64(info.AppliedSeq) || info.Vectors != info.Chunks {
			t.Fatalf("snapshot %+v: chunks and vectors must equal the applied sequence (>= 50)", info)
		}
	}
}
