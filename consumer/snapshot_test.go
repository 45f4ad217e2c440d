package consumer_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// sessionSpans returns the chunk spans of session s1 of ns.
func (h *harness) sessionSpans(ns string) string {
	h.t.Helper()
	ss, err := h.shardOf(ns).SessionChunkSpans(context.Background(), store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"})
	if err != nil {
		h.t.Fatal(err)
	}
	return fmt.Sprint(ss)
}

func openSnapshots(t *testing.T, js jetstream.JetStream, keep int) *consumer.Snapshots {
	t.Helper()
	s, err := consumer.OpenSnapshots(context.Background(), js, consumer.SnapshotConfig{Keep: keep, TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("OpenSnapshots: %v", err)
	}
	return s
}

// TestSnapshotRestoreThenReplay: a partition's snapshot goes to the NATS
// object store; the shard is deleted and restored from it at the
// snapshot's applied sequence; the worker then replays only the events
// after it and ends with the same chunks as before the deletion.
func TestSnapshotRestoreThenReplay(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const ns = "snap"
	p := memindex.Partition(ns, testPartitions)
	for i := int64(1); i <= 60; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("turn %d of a chat about sailing and bread", i)))
	}
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "notes.md", Content: "# Boats\nsailing notes\n# Bread\nsourdough"})
	h.publishEvent(memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: ns, ID: "r1", Text: "the user likes rye bread"})
	waitFor(t, "60 messages, a file and a record", func() bool {
		st := h.stats(ns)
		return st.Messages == 60 && st.VectorsWaiting == 0 && st.AppliedSeq == 62
	})
	snaps := openSnapshots(t, h.js, 2)
	ref, err := snaps.Take(ctx, p, h.shards[p])
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	atSnap := h.stats(ns)
	if ref.Info.AppliedSeq != atSnap.AppliedSeq || ref.Info.Chunks != atSnap.Chunks || ref.Name != fmt.Sprintf("p%d/%020d", p, atSnap.AppliedSeq) {
		t.Fatalf("Take()=%+v, want applied seq %d and %d chunks", ref, atSnap.AppliedSeq, atSnap.Chunks)
	}
	// Small chunks keep an upload below the stream's ingest queue limit
	// (snapshotChunkSize).
	obs, err := h.js.ObjectStore(ctx, consumer.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	if oi, err := obs.GetInfo(ctx, ref.Name); err != nil || oi.Opts == nil || oi.Opts.ChunkSize != 16<<10 {
		t.Fatalf("snapshot object %s: %+v, %v; want chunks of 16 KiB", ref.Name, oi, err)
	}
	for i := int64(61); i <= 80; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("later turn %d about knots", i)))
	}
	// Events after the snapshot change a file and a record too.
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "notes.md", Content: "# Boats\nsailing and knots\n"})
	h.publishEvent(memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: ns, ID: "r2", Text: "the user sails on Sundays"})
	waitFor(t, "80 messages, the file change and a second record", func() bool {
		st := h.stats(ns)
		return st.Messages == 80 && st.VectorsWaiting == 0 && st.AppliedSeq == 84
	})
	before, statsBefore := h.sessionSpans(ns), h.stats(ns)
	tablesBefore := dumpShard(t, h.shardPath(p))
	for _, want := range []string{"sailing and knots", "the user sails on Sundays", "later turn 80 about knots"} {
		if !strings.Contains(tablesBefore, want) {
			t.Fatalf("the tables before the deletion lack %q:\n%s", want, tablesBefore)
		}
	}

	h.shutdown()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := removeIfExists(h.shardPath(p) + suffix); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := snaps.Restore(ctx, p, h.shardPath(p), "")
	if err != nil || !ok || got.Name != ref.Name {
		t.Fatalf("Restore()=%+v, %v, %v; want %s", got, ok, err, ref.Name)
	}
	restored, err := store.Open(ctx, h.shardPath(p), store.Config{Dims: testDims})
	if err != nil {
		t.Fatalf("open the restored shard: %v", err)
	}
	st, err := restored.Stats(ctx)
	if err != nil || st.AppliedSeq != atSnap.AppliedSeq || st.Chunks != atSnap.Chunks || st.Messages != 60 {
		t.Fatalf("restored shard stats %+v, %v; want the snapshot's %+v", st, err, atSnap)
	}
	if err := restored.Check(ctx); err != nil {
		t.Fatalf("Check of the restored shard: %v", err)
	}
	if err := restored.Close(ctx); err != nil {
		t.Fatal(err)
	}

	h.start() // replays from the snapshot's sequence
	waitFor(t, "the replay after the snapshot", func() bool { st := h.stats(ns); return st.Messages == 80 && st.VectorsWaiting == 0 })
	if after := h.sessionSpans(ns); after != before {
		t.Fatalf("chunks after restore and replay = %v, want %v", after, before)
	}
	if got := h.stats(ns); got.Chunks != statsBefore.Chunks || got.AppliedSeq != statsBefore.AppliedSeq {
		t.Fatalf("stats after restore and replay = %+v, want %+v", got, statsBefore)
	}
	if err := h.shardOf(ns).Check(ctx); err != nil {
		t.Fatalf("Check after replay: %v", err)
	}
	if after := dumpShard(t, h.shardPath(p)); after != tablesBefore {
		t.Fatalf("tables after restore and replay differ from before the deletion:\nbefore %s\nafter  %s", tablesBefore, after)
	}
}

// dumpShard reads every row of a shard file's tables that a restore and
// replay must reproduce — messages, chunks (but rowids and insert times),
// files (but update times), records' chunks, each chunk's vector by chunk
// id, the applied sequence — through a read-only connection of its own.
func dumpShard(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT namespace, session_key, session_id, seq, id, role, speaker, text, ifnull(ts, -1) FROM messages ORDER BY 1, 2, 3, 4`,
		`SELECT id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, ifnull(ts_start, -1), ifnull(ts_end, -1),
			has_vector, path, dir_path, context FROM chunks ORDER BY id`,
		`SELECT namespace, path, dir_path, content_hash, content FROM files ORDER BY 1, 2`,
		`SELECT c.id, hex(v.embedding) FROM chunks c JOIN vec_chunks v ON v.rowid = c.rowid ORDER BY c.id`,
		`SELECT key, value FROM meta WHERE key = 'applied_seq'`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%v\n", vals)
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("%s: no rows in %s", q, path)
		}
	}
	return b.String()
}

// TestRestoreRefusesBadSnapshots: a snapshot whose bytes were damaged in
// the store, or of another vector space, is refused with a clear error and
// the shard file in place is left untouched; a partition without
// snapshots restores nothing.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const ns = "bad-snap"
	p := memindex.Partition(ns, testPartitions)
	for i := int64(1); i <= 10; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("turn %d", i)))
	}
	waitFor(t, "10 messages", func() bool { return h.stats(ns).Messages == 10 })
	snaps := openSnapshots(t, h.js, 1)
	if _, ok, err := snaps.Restore(ctx, (p+1)%testPartitions, filepath.Join(t.TempDir(), "x.db"), ""); ok || err != nil {
		t.Fatalf("Restore of a partition without snapshots = %v, %v; want false, nil", ok, err)
	}
	ref, err := snaps.Take(ctx, p, h.shards[p])
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "p.db")
	if err := os.WriteFile(target, []byte("the shard in place"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func() {
		t.Helper()
		if b, err := os.ReadFile(target); err != nil || string(b) != "the shard in place" {
			t.Fatalf("the shard in place was changed: %q, %v", b, err)
		}
	}

	_, _, err = snaps.Restore(ctx, p, target, "openai/text-embedding-3-small/64")
	if !errors.Is(err, store.ErrSpace) || !strings.Contains(err.Error(), "openai/text-embedding-3-small/64") {
		t.Fatalf("Restore for another space = %v, want store.ErrSpace naming the space", err)
	}
	untouched()

	// Damage the stored object: same name and metadata (the digest of the
	// original), one byte flipped.
	obs, err := h.js.ObjectStore(ctx, consumer.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	oi, err := obs.GetInfo(ctx, ref.Name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := obs.GetBytes(ctx, ref.Name)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if _, err := obs.Put(ctx, oi.ObjectMeta, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	_, _, err = snaps.Restore(ctx, p, target, "")
	if !errors.Is(err, store.ErrSnapshot) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("Restore of a damaged snapshot = %v, want store.ErrSnapshot about the sha256", err)
	}
	untouched()
	if left, _ := os.ReadDir(filepath.Dir(target)); len(left) != 1 {
		t.Fatalf("files beside the shard: %v, want only the shard (no download left behind)", left)
	}
}

// TestSnapshotRoundKeepsTheNewest: a round snapshots only partitions that
// applied something since their newest snapshot and that this worker
// owns, and only the Keep newest snapshots of a partition stay.
func TestSnapshotRoundKeepsTheNewest(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const ns = "rounds"
	p := memindex.Partition(ns, testPartitions)
	snaps := openSnapshots(t, h.js, 2)
	shards := map[int]consumer.Snapshotter{}
	for q, sh := range h.shards {
		shards[q] = sh
	}
	owns := func(q int) bool { return q == p }
	if took := snaps.Round(ctx, shards, owns); len(took) != 0 {
		t.Fatalf("Round over empty shards took %v, want none", took)
	}
	var seqs []uint64
	for round := range 3 {
		h.publishEvent(message(ns, "chat", "s1", int64(round+1), fmt.Sprintf("turn %d", round)))
		waitFor(t, "the message", func() bool { return h.stats(ns).Messages == int64(round+1) })
		took := snaps.Round(ctx, shards, owns)
		if len(took) != 1 || took[0].Partition != p {
			t.Fatalf("round %d took %+v, want one snapshot of partition %d", round, took, p)
		}
		seqs = append(seqs, took[0].Info.AppliedSeq)
		if again := snaps.Round(ctx, shards, owns); len(again) != 0 {
			t.Fatalf("a round without new events took %+v, want none", again)
		}
	}
	refs, err := snaps.List(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].Info.AppliedSeq != seqs[2] || refs[1].Info.AppliedSeq != seqs[1] {
		t.Fatalf("List()=%+v, want the two newest of %v", refs, seqs)
	}
	for q := range testPartitions {
		if q == p {
			continue
		}
		if refs, err := snaps.List(ctx, q); err != nil || len(refs) != 0 {
			t.Fatalf("partition %d (not owned) has snapshots %v, %v", q, refs, err)
		}
	}
}
