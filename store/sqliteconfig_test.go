package store

import (
	"math/rand/v2"
	"testing"
)

// TestSQLiteMemoryStatisticsAreOff fails when SQLite initialized before
// this package could turn its memory statistics off (sqliteconfig.go), or
// when they count anyway: SQLite then reports the bytes a shard holds.
func TestSQLiteMemoryStatisticsAreOff(t *testing.T) {
	if sqliteConfigRC != 0 {
		t.Fatalf("sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) returned %d, want SQLITE_OK: SQLite initialized first", sqliteConfigRC)
	}
	s := openTest(t, 8)
	msgs, sc := session("ns", "k", "s1", 50, rand.New(rand.NewPCG(1, 2)), 8)
	mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc}})
	if got := counts(t, s, "ns"); got.chunks != 50 {
		t.Fatalf("chunks %d, want 50", got.chunks)
	}
	if n := sqliteMemoryUsed(); n != 0 {
		t.Fatalf("SQLite counts %d bytes in use: its memory statistics are on", n)
	}
}
