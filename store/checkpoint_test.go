package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestCheckpointsKeepTheWALShort applies the same batches to three shards:
// one as Open makes it (the checkpointer runs after each commit), one
// without its checkpointer but with the writer's valve lowered to 64
// pages, and one with neither (its WAL only grows, the batches being far
// below the default valve). The first two must keep their WAL a fraction
// of the third's, every row must be found in each, and the writer must
// not checkpoint by itself below walValveBytes.
func TestCheckpointsKeepTheWALShort(t *testing.T) {
	ctx := context.Background()
	const dims = 16
	background := openTest(t, dims)
	none := openTest(t, dims)
	stopCheckpointer(t, none)
	orig := walValveBytes
	walValveBytes = 64 * shardPageBytes
	valve := openTest(t, dims)
	walValveBytes = orig // the shards keep what they opened with
	stopCheckpointer(t, valve)

	for s, want := range map[*Shard]int{background: orig / shardPageBytes, valve: 64} {
		var auto int
		if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != want {
			t.Fatalf("writer wal_autocheckpoint = %d (%v), want %d", auto, err, want)
		}
	}

	r := rand.New(rand.NewPCG(3, 4))
	const batches, sessions, per = 30, 4, 25
	for i := range batches {
		b := Batch{Seq: uint64(i + 1)}
		for k := range sessions {
			msgs, sc := session("n", fmt.Sprintf("k%d-%d", i, k), fmt.Sprintf("s%d", i), per, r, dims)
			b.Messages = append(b.Messages, msgs...)
			b.Rechunk = append(b.Rechunk, sc)
		}
		for _, s := range []*Shard{background, none, valve} {
			mustApply(t, s, b)
		}
		waitCheckpointed(t, background)
	}
	runs, lastErr := background.ckpt.stats()
	if runs == 0 || lastErr != "" {
		t.Fatalf("checkpointer ran %d times, last error %q", runs, lastErr)
	}
	if n, e := background.Checkpoints(); n != runs || e != "" {
		t.Fatalf("Checkpoints: %d, error %q, want %d and none", n, e, runs)
	}
	grown := walSize(t, none)
	for name, s := range map[string]*Shard{"background": background, "valve": valve} {
		if n := walSize(t, s); n*4 > grown {
			t.Errorf("%s: WAL of %d bytes, want under a quarter of the %d bytes of a WAL never checkpointed", name, n, grown)
		}
	}
	for _, s := range []*Shard{background, none, valve} {
		if got := counts(t, s, "n"); got.messages != batches*sessions*per || got.chunks != batches*sessions*per {
			t.Fatalf("%s: counts %+v, want %d messages and chunks", s.Path(), got, batches*sessions*per)
		}
		integrity(t, s)
	}
}

// stopCheckpointer stops s's checkpointer; Apply's kicks then do nothing.
func stopCheckpointer(t *testing.T, s *Shard) {
	t.Helper()
	if err := s.ckpt.stop(); err != nil {
		t.Fatal(err)
	}
	s.ckpt = nil
}

// waitCheckpointed polls until s's checkpointer has served every kick.
func waitCheckpointed(t *testing.T, s *Shard) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.ckpt.served.Load() < s.ckpt.kicks.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("checkpointer served %d of %d kicks in 10s", s.ckpt.served.Load(), s.ckpt.kicks.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

func walSize(t *testing.T, s *Shard) int64 {
	t.Helper()
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
