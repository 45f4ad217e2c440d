package query

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/client"
)

// TestSearchOfAClosedShardSaysRetry: a search or read whose shard is
// closed under it (its partition was dropped while it ran: a hand-over to
// another worker) answers 503 "retry", not "search unavailable" or an
// internal error. Both legs of a search fail then, and the all-legs-failed
// error once hid the shard's ErrClosed from handedOver
// (TestGroupSpreadsAndTakesOverAfterGracefulStop met it in a test run).
func TestSearchOfAClosedShardSaysRetry(t *testing.T) {
	sh := openTestShard(t, filepath.Join(t.TempDir(), "p0.db"))
	applyTexts(t, sh, 1, "Ana is moving to Lisbon in May")
	mustTB(t, sh.Close(context.Background()))
	nc, _ := setup(t, ServiceConfig{}, sh)
	for _, mode := range []string{memindex.ModeHybrid, memindex.ModeKeyword, memindex.ModeVector} {
		_, err := client.NewClient(nc).Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana Lisbon", Mode: mode})
		if !errors.Is(err, memindex.ErrUnavailable) || !strings.Contains(err.Error(), "moved to another worker") || !strings.Contains(err.Error(), "retry") {
			t.Fatalf("%s search of a closed shard: %v; want a 503 to retry", mode, err)
		}
	}
	_, err := client.NewClient(nc).Read(ctxT(t), memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1"})
	if !errors.Is(err, memindex.ErrUnavailable) || !strings.Contains(err.Error(), "moved to another worker") || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("read of a closed shard: %v; want a 503 to retry", err)
	}
}
