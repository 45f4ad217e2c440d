package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/embedder"
	"memindex/node"
	"memindex/store"
)

// shardView is what a test compares of a rebuilt or restored shard: its
// counts, the chunk spans of one session and a vector search's ids.
type shardView struct {
	stats  store.Stats
	spans  string
	vector string
}

func viewShard(t *testing.T, sh *store.Shard, ns string) shardView {
	t.Helper()
	ctx := context.Background()
	st, err := sh.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.OldestWaiting = time.Time{}
	// The indexes' heap estimates follow slice capacities, which depend on
	// how the shard grew, not on what it holds.
	st.KeywordIndexBytes, st.VectorIndexBytes = 0, 0
	spans, err := sh.SessionChunkSpans(ctx, store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: 384})
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Embed(ctx, embedder.Request{Texts: []string{"sailing in the storm"}, Kind: embedder.KindQuery})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := sh.VectorSearch(ctx, ns, q[0], store.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	if len(ids) == 0 {
		t.Fatal("vector search found nothing")
	}
	if err := sh.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return shardView{stats: st, spans: fmt.Sprint(spans), vector: strings.Join(ids, ",")}
}

// jsonLines decodes the JSON lines of out whose type is typ.
func jsonLines(t *testing.T, out string, typ string) []node.RebuildEvent {
	t.Helper()
	var evs []node.RebuildEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e node.RebuildEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		if e.Type == typ {
			evs = append(evs, e)
		}
	}
	return evs
}

// TestSnapshotCommandAndRebuildPartition: `memindex snapshot` takes a
// snapshot beside the running worker; `rebuild --partition` refuses while
// it runs; once it is stopped, `rebuild --partition N --from-snapshot`
// restores the snapshot and replays only the events after it, and
// `rebuild --partition N` replays the whole stream: both give the shard
// the worker had (counts, chunk spans, vector hits) and report progress.
func TestSnapshotCommandAndRebuildPartition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n, stop := testNodeIn(t, dir, 2)
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "sailor"
	p := memindex.Partition(ns, 2)
	publish := func(from, to int) {
		for i := from; i <= to; i++ {
			e := memindex.Event{Type: memindex.TypeMessage, SessionKey: "chat", SessionID: "s1", Seq: int64(i), Speaker: "Ana",
				Text: fmt.Sprintf("message %d about sailing, knots and the storm of day %d", i, i%7)}
			b, _ := json.Marshal(e)
			if _, err := js.Publish(ctx, memindex.EventSubject(ns), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	settled := func(msgs int64) func() bool {
		return func() bool {
			st, err := n.Shards()[p].Stats(ctx)
			return err == nil && st.Messages == msgs && st.VectorsWaiting == 0
		}
	}
	publish(1, 40)
	waitUntil(t, 20*time.Second, "40 messages", settled(40))
	atSnap, err := n.Shards()[p].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := runSnapshot(ctx, []string{"--data", dir, "--server", n.URL(), "--partition", fmt.Sprint(p), "--json"}, &out); err != nil {
		t.Fatalf("snapshot beside the running worker: %v", err)
	}
	var snap struct {
		Partition int                `json:"partition"`
		Object    string             `json:"object"`
		Info      store.SnapshotInfo `json:"info"`
	}
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil || snap.Partition != p || snap.Info.AppliedSeq != atSnap.AppliedSeq || snap.Info.Chunks != atSnap.Chunks {
		t.Fatalf("snapshot output %s (%v), want partition %d at seq %d with %d chunks", out.String(), err, p, atSnap.AppliedSeq, atSnap.Chunks)
	}
	publish(41, 60)
	waitUntil(t, 20*time.Second, "60 messages", settled(60))
	want := viewShard(t, n.Shards()[p], ns)

	out.Reset()
	if err := runRebuild(ctx, []string{"--data", dir, "--partition", fmt.Sprint(p)}, &out); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("rebuild beside the running worker = %v, want the data lock to refuse it", err)
	}
	stop()

	common := []string{"--data", dir, "--partition", fmt.Sprint(p), "--chunk-tokens", "400", "--chunk-context", "2", "--json"}
	for _, tc := range []struct {
		name      string
		args      []string
		wantFirst uint64
	}{
		{"from the snapshot", append([]string{"--from-snapshot"}, common...), atSnap.AppliedSeq},
		{"from the stream", common, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runRebuild(ctx, tc.args, &out); err != nil {
				t.Fatalf("rebuild: %v\n%s", err, out.String())
			}
			t.Logf("rebuild output:\n%s", out.String())
			done := jsonLines(t, out.String(), "rebuild.done")
			if len(done) != 1 {
				t.Fatalf("rebuild output %q, want one rebuild.done line", out.String())
			}
			d := done[0]
			if d.Partition != p || d.FirstSeq != tc.wantFirst || d.AppliedSeq != want.stats.AppliedSeq || d.Chunks != want.stats.Chunks ||
				(tc.wantFirst > 0) != (d.From == snap.Object) {
				t.Fatalf("rebuild.done %+v, want partition %d from seq %d (snapshot %q) to %d with %d chunks",
					d, p, tc.wantFirst, snap.Object, want.stats.AppliedSeq, want.stats.Chunks)
			}
			n2, stop2 := testNodeIn(t, dir, 2)
			defer stop2()
			if got := viewShard(t, n2.Shards()[p], ns); got != want {
				t.Fatalf("rebuilt shard %+v, want %+v", got, want)
			}
		})
	}
}
