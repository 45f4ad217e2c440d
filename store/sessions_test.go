package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// sessionsRows returns the sessions table as "namespace/key/id" → sid.
func sessionsRows(t *testing.T, s *Shard) map[string]int64 {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT sid, namespace, session_key, session_id FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var sid int64
		var ns, k, id string
		if err := rows.Scan(&sid, &ns, &k, &id); err != nil {
			t.Fatal(err)
		}
		out[ns+"/"+k+"/"+id] = sid
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A shard written before migration 0009 (messages and chunks found by
// their session's three strings) gets a sessions row for every session
// and the sid of its own in every message and chunk; the session reads and
// deletes go through the sid indexes, and the writer goes on with the sids
// the migration gave.
func TestMigrationToSessionIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	db := migratedTo(t, path, 8)
	// Two keys of one namespace (one with two session ids) and a key of
	// another, written interleaved as Apply wrote them before 0009.
	refs := []SessionRef{{"n", "a", "s1"}, {"n", "a", "s2"}, {"n", "b", "s1"}, {"m", "a", "s1"}}
	for seq := 1; seq <= 5; seq++ {
		for _, r := range refs {
			id := fmt.Sprintf("%s-%s-%s-%d", r.Namespace, r.SessionKey, r.SessionID, seq)
			text := fmt.Sprintf("%s says %d", r.SessionKey, seq)
			if _, err := db.Exec(`INSERT INTO messages(namespace, session_key, session_id, seq, id, role, speaker, text, ts)
				VALUES (?, ?, ?, ?, ?, 'user', 'Ana', ?, 1000)`, r.Namespace, r.SessionKey, r.SessionID, seq, id, text); err != nil {
				t.Fatal(err)
			}
			res, err := db.Exec(`INSERT INTO chunks(id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, context, fts_ver)
				VALUES (?, ?, 'sessions', ?, ?, ?, ?, 0, ?, '', 0)`, "c-"+id, r.Namespace, r.SessionKey, r.SessionID, seq, seq, text)
			if err != nil {
				t.Fatal(err)
			}
			rowid, _ := res.LastInsertId()
			if _, err := db.Exec(`INSERT INTO chunks_fts(rowid, fts_body, ns, fts_words, fts_ctx, sk) VALUES (?, ?, ?, NULL, '', ?)`,
				rowid, text, nsToken(r.Namespace), skToken(r.SessionKey)); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()

	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open a shard from before 0009: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	mustCheck(t, s) // every message and chunk names its own session's row
	before := sessionsRows(t, s)
	if len(before) != len(refs) {
		t.Fatalf("sessions after 0009 = %v, want the %d sessions", before, len(refs))
	}
	for _, r := range refs {
		spans, err := s.SessionChunkSpans(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := s.SessionMessages(ctx, r, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(spans) != 5 || len(msgs) != 4 || msgs[0].Seq != 2 || msgs[0].Text != r.SessionKey+" says 2" {
			t.Fatalf("session %v: %d chunks, messages from 2 %+v", r, len(spans), msgs)
		}
	}
	// The writer finds the sids the migration gave: a replaced message and
	// a new one of an old session add no session.
	mustApply(t, s, Batch{Seq: 1, Messages: []Message{
		{Namespace: "n", SessionKey: "a", SessionID: "s1", Seq: 3, ID: "edited", Text: "a edited 3"},
		{Namespace: "n", SessionKey: "a", SessionID: "s1", Seq: 6, ID: "new", Text: "a says 6"},
	}})
	if after := sessionsRows(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("sessions after writing to old ones = %v, want %v", after, before)
	}
	msgs, err := s.SessionMessages(ctx, refs[0], 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 6 || msgs[2].Text != "a edited 3" || msgs[5].Text != "a says 6" {
		t.Fatalf("session after the upsert: %+v", msgs)
	}
	// Every query that names a session searches an index on sid, never
	// scans messages or chunks.
	for _, q := range []string{
		`SELECT seq, id, role, speaker, text, ts FROM messages WHERE sid = ` + sqlSidOf + ` AND seq >= ? ORDER BY seq LIMIT ?`,
		`SELECT seq, id, role, speaker, text, ts FROM messages WHERE sid = ` + sqlSidOf + ` AND seq < ? ORDER BY seq DESC LIMIT ?`,
		`SELECT id, seq_start, seq_end, part FROM chunks WHERE sid = ` + sqlSidOf + ` ORDER BY seq_start, part`,
		sqlDeleteMessagesKey, sqlDeleteMessagesSession, sqlDeleteChunksKey, sqlDeleteChunksSession, sqlSelectTail,
		tailValues(2) + ` SELECT s.i, c.id FROM s CROSS JOIN sessions ss ON ss.namespace = s.ns AND ss.session_key = s.k
			AND ss.session_id = s.id CROSS JOIN chunks c ON c.sid = ss.sid AND c.seq_start >= s.seq`,
	} {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = "x"
		}
		plan := queryPlan(t, s, q, args...)
		if strings.Contains(plan, "SCAN messages") || strings.Contains(plan, "SCAN chunks") ||
			!(strings.Contains(plan, "messages_key") || strings.Contains(plan, "chunks_session")) {
			t.Errorf("plan of %q = %q, want a search of messages_key or chunks_session", q, plan)
		}
	}
	// Deleting a key drops its sessions' rows and nothing else.
	mustApply(t, s, Batch{Seq: 2, DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "a"}}})
	after := sessionsRows(t, s)
	if _, ok := after["n/a/s1"]; ok || len(after) != 2 || after["n/b/s1"] != before["n/b/s1"] || after["m/a/s1"] != before["m/a/s1"] {
		t.Fatalf("sessions after deleting n/a = %v (before %v)", after, before)
	}
	// A session of messages only goes with them too.
	mustApply(t, s, Batch{Seq: 3, Messages: []Message{{Namespace: "n", SessionKey: "c", SessionID: "s1", Seq: 1, Text: "no chunk"}}})
	if _, ok := sessionsRows(t, s)["n/c/s1"]; !ok {
		t.Fatal("no sessions row for a session of messages only")
	}
	mustApply(t, s, Batch{Seq: 4, DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "c", SessionID: "s1"}}})
	if after := sessionsRows(t, s); len(after) != 2 {
		t.Fatalf("sessions after deleting n/c/s1 = %v, want n/b/s1 and m/a/s1", after)
	}
	mustCheck(t, s)
}

// A transaction that rolls back takes its new sessions with it: the sid it
// gave a session is given again by the next one, to whichever session
// comes first, and each session's rows name its own sid.
func TestRolledBackSessionsLeaveNoSid(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	msg := func(key string, seq int64) Message {
		return Message{Namespace: "n", SessionKey: key, SessionID: "s", Seq: seq, ID: fmt.Sprint(key, seq), Text: key + " text"}
	}
	mustApply(t, s, Batch{Seq: 1, Messages: []Message{msg("keep", 1), msg("gone", 1)}})
	fail := errors.New("injected")
	s.applyHook = func(stage string) error {
		if stage == "messages" {
			return fail
		}
		return nil
	}
	// x gets a new sid and gone's is deleted, then the transaction fails.
	if _, err := s.Apply(ctx, Batch{Seq: 2, DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "gone"}},
		Messages: []Message{msg("x", 1)}}); !errors.Is(err, fail) {
		t.Fatalf("Apply with a failing stage: %v", err)
	}
	s.applyHook = nil
	// y takes the sid x had in the rolled-back transaction; x, gone and
	// keep must each keep to their own.
	mustApply(t, s, Batch{Seq: 3, Messages: []Message{msg("y", 1)}})
	mustApply(t, s, Batch{Seq: 4, Messages: []Message{msg("x", 1), msg("gone", 2), msg("keep", 2)}})
	mustCheck(t, s)
	rows := sessionsRows(t, s)
	if len(rows) != 4 {
		t.Fatalf("sessions = %v, want keep, gone, x and y", rows)
	}
	for _, key := range []string{"keep", "gone", "x", "y"} {
		msgs, err := s.SessionMessages(ctx, SessionRef{"n", key, "s"}, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Text != key+" text" {
				t.Fatalf("session %s holds %+v", key, m)
			}
		}
		if want := map[string]int{"keep": 2, "gone": 2, "x": 1, "y": 1}[key]; len(msgs) != want {
			t.Fatalf("session %s: %d messages, want %d", key, len(msgs), want)
		}
	}
}
