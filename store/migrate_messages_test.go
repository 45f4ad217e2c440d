package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A shard written before migration 0008 (messages a WITHOUT ROWID table
// keyed by session) keeps every message through the rebuild; the upsert
// still replaces a message of the same key, and the queries on messages
// read through the new key index rather than scanning the table.
func TestMigrationToAppendedMessages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	db := migratedTo(t, path, 7)
	var ddl string
	if err := db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'messages'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "WITHOUT ROWID") {
		t.Fatalf("messages before 0008 = %s, want the WITHOUT ROWID table", ddl)
	}
	// Two sessions, their messages written interleaved and out of order.
	for i := 9; i >= 0; i-- {
		for _, k := range []string{"a", "b"} {
			if _, err := db.Exec(`INSERT INTO messages(namespace, session_key, session_id, seq, id, role, speaker, text, ts)
				VALUES ('n', ?, 's', ?, ?, 'user', 'Ana', ?, ?)`, k, i+1, fmt.Sprintf("%s-%d", k, i+1), fmt.Sprintf("%s says %d", k, i+1), 1000+i); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()

	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open a shard from before 0008: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	if err := s.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'messages'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ddl, "WITHOUT ROWID") {
		t.Fatalf("messages after 0008 = %s, want a rowid table", ddl)
	}
	for _, k := range []string{"a", "b"} {
		got, err := s.SessionMessages(ctx, SessionRef{"n", k, "s"}, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 8 {
			t.Fatalf("session %s from seq 3: %d messages, want 8", k, len(got))
		}
		for j, m := range got {
			if m.Seq != int64(j+3) || m.ID != fmt.Sprintf("%s-%d", k, j+3) || m.Text != fmt.Sprintf("%s says %d", k, j+3) || m.Role != "user" || m.Speaker != "Ana" {
				t.Fatalf("session %s message %d = %+v", k, j, m)
			}
		}
	}
	// The upsert replaces a message of the same key; a new one is added.
	mustApply(t, s, Batch{Seq: 1, Messages: []Message{
		{Namespace: "n", SessionKey: "a", SessionID: "s", Seq: 4, ID: "a-4", Text: "a edited 4"},
		{Namespace: "n", SessionKey: "a", SessionID: "s", Seq: 11, ID: "a-11", Text: "a says 11"},
	}})
	got, err := s.SessionMessages(ctx, SessionRef{"n", "a", "s"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 11 || got[3].Text != "a edited 4" || got[10].Text != "a says 11" {
		t.Fatalf("session a after the upsert: %d messages, seq 4 %q, last %q", len(got), got[3].Text, got[len(got)-1].Text)
	}
	for _, q := range []string{
		`SELECT seq, id, role, speaker, text, ts FROM messages WHERE sid = ` + sqlSidOf + ` AND seq >= ? ORDER BY seq LIMIT ?`,
		sqlDeleteMessagesKey, sqlDeleteMessagesSession,
	} {
		n := strings.Count(q, "?")
		args := make([]any, n)
		for i := range args {
			args[i] = "x"
		}
		plan := queryPlan(t, s, q, args...)
		if !strings.Contains(plan, "messages_key") || strings.Contains(plan, "SCAN messages") {
			t.Errorf("plan of %q = %q, want a search of messages_key", q, plan)
		}
	}
	mustCheck(t, s)
}

// queryPlan is EXPLAIN QUERY PLAN of q on the shard's readers, its
// details joined by "; ".
func queryPlan(t *testing.T, s *Shard, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, "; ")
}
