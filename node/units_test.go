package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"memindex/store"
)

// A data directory whose shard holds multi-message session windows (an
// older memindex) is refused by serve with the command that fixes it, and
// starts again once that command ran.
func TestServeRefusesWindowShardsAndNamesTheRebuild(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	n, stop := runTestNode(t, cfg, nil)
	path := ShardPath(n.serving.dir, 0)
	stop()

	ctx := context.Background()
	sh, err := store.Open(ctx, path, store.Config{Dims: 384})
	if err != nil {
		t.Fatal(err)
	}
	ref := store.SessionRef{Namespace: "old", SessionKey: "chat", SessionID: "s1"}
	msgs := []store.Message{
		{Namespace: "old", SessionKey: "chat", SessionID: "s1", Seq: 1, Text: "hello"},
		{Namespace: "old", SessionKey: "chat", SessionID: "s1", Seq: 2, Text: "hi there"},
	}
	window := store.Chunk{ID: "w1", Namespace: "old", Source: "sessions", SessionKey: "chat", SessionID: "s1", SeqStart: 1, SeqEnd: 2, Text: "hello\nhi there"}
	if _, err := sh.Apply(ctx, store.Batch{Seq: 0, Messages: msgs, Rechunk: []store.SessionChunks{{Session: ref, From: 1, Chunks: []store.Chunk{window}}}}); err != nil {
		t.Fatal(err)
	}
	if err := sh.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// As a file of an older memindex: never marked as checked for windows.
	db, err := store.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM meta WHERE key = 'message_units'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, store.ErrOldUnits) || !strings.Contains(err.Error(), "memindex rebuild --all --data "+dir) {
		t.Fatalf("Open on a window shard = %v; want ErrOldUnits naming `memindex rebuild --all --data %s`", err, dir)
	}
	if _, _, err := DropShards(dir); err != nil {
		t.Fatalf("rebuild --all: %v", err)
	}
	n2, stop2 := runTestNode(t, cfg, nil)
	defer stop2()
	if !n2.holds(0) {
		t.Fatal("after rebuild --all the worker does not serve partition 0")
	}
}
