package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestRowExecFollowsANewConnection: when database/sql replaces the
// writer's connection (here it keeps none idle, so every transaction
// opens one), the statements are prepared again on the new one, the old
// ones finalized, and every row lands. A statement run on the closed
// connection would fail, or worse.
func TestRowExecFollowsANewConnection(t *testing.T) {
	s := openTest(t, 8)
	r := rand.New(rand.NewPCG(3, 4))
	s.w.SetMaxIdleConns(0)
	var handles []int64
	for i := range 3 {
		ns := []string{"a", "b", "c"}[i]
		msgs, sc := session(ns, "k", "s1", 20, r, 8)
		mustApply(t, s, Batch{Seq: uint64(i + 1), Messages: msgs, Rechunk: []SessionChunks{sc}})
		handles = append(handles, s.rx.db)
		if got := counts(t, s, ns); got.messages != 20 || got.chunks != 20 || got.fts != 20 || got.vec != 20 {
			t.Fatalf("namespace %s holds %+v, want 20 of each", ns, got)
		}
	}
	if handles[0] == 0 || handles[0] == handles[1] && handles[1] == handles[2] {
		t.Fatalf("connection handles %v: want the statements prepared again on a new connection", handles)
	}
	integrity(t, s)
}

// TestRowExecErrors: a step that fails returns SQLite's message and
// unwraps to a sqlite3.Error with its codes, as go-sqlite3's errors do
// (transient and vec0Failed read them); a value of a type it cannot bind,
// or a wrong number of values, is an error before anything runs.
func TestRowExecErrors(t *testing.T) {
	w := testWriter(t)
	a := &w.args
	a.reset()
	for range 10 {
		a.null() // messages.namespace is NOT NULL
	}
	_, err := w.rx.exec(rxUpsertMessage, a)
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrConstraint || se.ExtendedCode != sqlite3.ErrConstraintNotNull {
		t.Fatalf("NULL namespace: %v (%#v), want a NOT NULL constraint error", err, se)
	}
	if !strings.Contains(err.Error(), "NOT NULL constraint failed") {
		t.Errorf("error %q lacks SQLite's message", err)
	}

	a.reset()
	a.int(1)
	if _, err := w.rx.exec(rxUpsertMessage, a); err == nil || !strings.Contains(err.Error(), "1 values for 10 parameters") {
		t.Errorf("one value: %v, want a count error", err)
	}
	a.reset()
	a.value(3.5)
	if _, err := w.rx.exec(rxUpsertMessage, a); err == nil || !strings.Contains(err.Error(), "cannot bind a float64") {
		t.Errorf("a float64: %v, want a type error", err)
	}
}

// TestRowArgsBindsAsDatabaseSQL: the values rowExec binds read back as
// those database/sql binds: an empty text is ” (not NULL), a bool 1,
// UTF-8 as it is; a nil blob is NULL, an empty one a blob.
func TestRowArgsBindsAsDatabaseSQL(t *testing.T) {
	w := testWriter(t)
	ctx, tx := context.Background(), w.tx
	sid, err := w.sid(SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	a := &w.args
	a.reset()
	a.int(sid)
	a.text("n")
	a.text("k")
	a.text("s")
	a.int(7)
	a.text("")           // id
	a.value(true)        // role: bound as 1 (text by the column's affinity)
	a.text("Ana")        // speaker
	a.text("héllo ’ 中文") // text
	a.null()             // ts
	if _, err := w.rx.exec(rxUpsertMessage, a); err != nil {
		t.Fatal(err)
	}
	var id, role, speaker, text string
	var idType, roleType, tsType string
	err = tx.QueryRowContext(ctx, `SELECT id, typeof(id), role, typeof(role), speaker, text, typeof(ts) FROM messages WHERE sid = ? AND seq = 7`, sid).
		Scan(&id, &idType, &role, &roleType, &speaker, &text, &tsType)
	if err != nil {
		t.Fatal(err)
	}
	a.reset()
	a.blob(nil)
	a.blob([]byte{})
	if a.kinds[0] != rxNull || a.kinds[1] != rxBlob || a.lens[1] != 0 {
		t.Errorf("blobs nil and empty: kinds %v lens %v, want NULL then a blob of 0 bytes", a.kinds, a.lens)
	}
	if id != "" || idType != "text" || role != "1" || roleType != "text" || speaker != "Ana" || text != "héllo ’ 中文" || tsType != "null" {
		t.Fatalf("row (%q %s, %q %s, %q, %q, ts %s)", id, idType, role, roleType, speaker, text, tsType)
	}
}

// testWriter returns the writer of a transaction of a new shard, which the
// test's end rolls back.
func testWriter(t *testing.T) *writer {
	t.Helper()
	s := openTest(t, 8)
	s.writeMu.Lock()
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.newWriter(context.Background(), tx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.close()
		tx.Rollback()
		s.writeMu.Unlock()
	})
	return w
}
