package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/sourcegraph/conc"

	"memindex/internal/failpoint"
)

// SQL the writer runs, prepared once at Open on the single writer connection
// and bound to each transaction with Tx.StmtContext.
const (
	// sqlSelectSid is the sid of the session named by three parameters
	// (namespace, session key, session id); sqlSelectKeySids those of
	// every session of a key (migration 0009). sqlSidOf and sqlSidsOfKey
	// are the same as subqueries (sqlSidOf is NULL for no session).
	sqlSelectSid     = `SELECT sid FROM sessions WHERE namespace = ? AND session_key = ? AND session_id = ?`
	sqlSelectKeySids = `SELECT sid FROM sessions WHERE namespace = ? AND session_key = ?`
	sqlSidOf         = `(` + sqlSelectSid + `)`
	sqlSidsOfKey     = `(` + sqlSelectKeySids + `)`
	sqlInsertSession = `INSERT INTO sessions(namespace, session_key, session_id) VALUES (?, ?, ?)`
	sqlUpsertMessage = `INSERT INTO messages(sid, namespace, session_key, session_id, seq, id, role, speaker, text, ts)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(sid, seq) DO UPDATE SET
		id = excluded.id, role = excluded.role, speaker = excluded.speaker, text = excluded.text, ts = excluded.ts`
	sqlDeleteMessagesKey     = `DELETE FROM messages WHERE sid IN ` + sqlSidsOfKey
	sqlDeleteMessagesSession = `DELETE FROM messages WHERE sid = ` + sqlSidOf
	// sqlDropEmptySession deletes the session sid when no message and no
	// chunk names it any more.
	sqlDropEmptySession = `DELETE FROM sessions WHERE sid = ?
		AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.sid = sessions.sid)
		AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sessions.sid) RETURNING namespace, session_key, session_id`
	sqlDeleteChunksKey     = `DELETE FROM chunks WHERE sid IN ` + sqlSidsOfKey + ` RETURNING rowid, fts_body, fts_words, fts_ctx, sk, has_vector, sid`
	sqlDeleteChunksSession = `DELETE FROM chunks WHERE sid = ` + sqlSidOf + ` RETURNING rowid, fts_body, fts_words, fts_ctx, sk, has_vector, sid`
	sqlSelectTail          = `SELECT rowid, id, fts_body, fts_words, fts_ctx, sk, has_vector, sid FROM chunks
		WHERE sid = ` + sqlSidOf + ` AND seq_start >= ?`
	sqlDeleteChunk = `DELETE FROM chunks WHERE rowid = ?`
	sqlInsertChunk = `INSERT INTO chunks(sid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, ts_start, ts_end, has_vector, created_at, path, dir_path, fts_seg, fts_words, fts_ver, context, ctx_seg)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, unixepoch(), ?, ?, ?, ?, ?, ?, ?)`
	sqlDeleteFileChunks = `DELETE FROM chunks WHERE namespace = ? AND path = ? AND source = ? RETURNING rowid, fts_body, fts_words, fts_ctx, sk, has_vector, sid`
	sqlDeleteFile       = `DELETE FROM files WHERE namespace = ? AND path = ?`
	sqlUpsertFile       = `INSERT INTO files(namespace, path, dir_path, content_hash, content, updated_at) VALUES (?, ?, ?, ?, ?, unixepoch())
		ON CONFLICT(namespace, path) DO UPDATE SET dir_path = excluded.dir_path, content_hash = excluded.content_hash,
		content = excluded.content, updated_at = excluded.updated_at`
	sqlFTSInsert   = `INSERT INTO chunks_fts(rowid, fts_body, ns, fts_words, sk) VALUES (?, ?, ?, ?, ?)`
	sqlFTSDelete   = `INSERT INTO chunks_fts(chunks_fts, rowid, fts_body, ns, fts_words, sk) VALUES ('delete', ?, ?, ?, ?, ?)`
	sqlVecInsert   = `INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)`
	sqlVecDelete   = `DELETE FROM vec_chunks WHERE rowid = ?`
	sqlSetHasVec   = `UPDATE chunks SET has_vector = 1 WHERE rowid = ?`
	sqlSetSeq      = `UPDATE meta SET value = max(value, ?) WHERE key = 'applied_seq'`
	sqlChunkVecRow = `SELECT id, namespace, session_key, session_id, ts_start, ts_end, source, dir_path FROM chunks WHERE rowid = ?`
)

// writeStmts are the writer's prepared statements, but those of every
// message, which rowExec runs (rowexec.go).
type writeStmts struct {
	deleteMessagesKey, deleteMessagesSession           *sql.Stmt
	deleteChunksKey, deleteChunksSession, selectTail   *sql.Stmt
	deleteChunk, ftsDelete                             *sql.Stmt
	vecInsert, vecDelete, setHasVec, setSeq            *sql.Stmt
	selectSid, selectKeySids, insertSession, dropEmpty *sql.Stmt
	// bulk writes a transaction's vectors into vec_chunks' shadow tables
	// (vec0bulk.go); nil in go-scan mode or when it cannot.
	bulk *vec0Bulk
	// all holds every statement but vecInsert and vecDelete, which follow
	// the vector mode (swapVec).
	all []*sql.Stmt
}

// prepareWriteStmts prepares the writer's statements; the vector ones write
// vec_plain when plain, else vec_chunks (see VectorMode).
func prepareWriteStmts(ctx context.Context, db *sql.DB, plain bool) (*writeStmts, error) {
	ws := &writeStmts{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&ws.deleteMessagesKey, sqlDeleteMessagesKey},
		{&ws.deleteMessagesSession, sqlDeleteMessagesSession},
		{&ws.deleteChunksKey, sqlDeleteChunksKey},
		{&ws.deleteChunksSession, sqlDeleteChunksSession},
		{&ws.selectTail, sqlSelectTail},
		{&ws.deleteChunk, sqlDeleteChunk},
		{&ws.ftsDelete, sqlFTSDelete},
		{&ws.setHasVec, sqlSetHasVec},
		{&ws.setSeq, sqlSetSeq},
		{&ws.selectSid, sqlSelectSid},
		{&ws.selectKeySids, sqlSelectKeySids},
		{&ws.insertSession, sqlInsertSession},
		{&ws.dropEmpty, sqlDropEmptySession},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			ws.close()
			return nil, fmt.Errorf("%.40s: %w", p.sql, err)
		}
		*p.dst = st
		ws.all = append(ws.all, st)
	}
	ins, del, err := prepareVecStmts(ctx, db, plain)
	if err != nil {
		ws.close()
		return nil, err
	}
	ws.swapVec(ins, del)
	if !plain {
		ws.bulk = prepareVec0Bulk(ctx, db)
	}
	return ws, nil
}

func (ws *writeStmts) close() error {
	var errs []error
	for _, st := range ws.all {
		errs = append(errs, st.Close())
	}
	ws.bulk.close()
	for _, st := range []*sql.Stmt{ws.vecInsert, ws.vecDelete} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// writer runs the statements of one write transaction and records the
// in-memory index changes to make once it commits.
//
// Statements run with ctx without its cancellation: go-sqlite3 runs every
// statement of a cancellable context on a goroutine of its own (and
// database/sql watches every Rows of a transaction with another), which
// costs more than the statement itself. Cancellation is honoured instead by
// checking parent between rows (alive) and by the transaction, which
// database/sql rolls back when parent ends.
type writer struct {
	parent context.Context
	ctx    context.Context
	tx     *sql.Tx
	ws     *writeStmts
	dims   int
	bound  map[*sql.Stmt]*sql.Stmt
	buf    []byte // vector encoding scratch; the driver copies bound blobs
	ops    []indexOp
	// vecQueue holds the vectors written but not yet stored, when the
	// statements can write them at once (flushVectors).
	vecQueue []queuedVector
	kwOps    []kwOp // keyword index changes (kwindex.go)
	// prep counts the tokens of kwOps' rows while the transaction runs
	// (kwprep.go); nil when the shard has no keyword index to post them to.
	prep *kwPrep
	// tails are the stored tails of the sessions of the batch's Rechunk,
	// read by readTails, each taken once by tail.
	tails map[SessionRef][]storedChunk
	stats ApplyStats
	// nsDelta is the change of each namespace's chunk count.
	nsDelta map[string]int64
	// sids is the shard's cache of session ids (sessions.sid) as of the
	// last commit, which only the writer uses; newSids is what this
	// transaction changed of it, 0 for a session it deleted. They meet
	// after the commit (commitSids), so a rolled-back transaction leaves
	// no sid in the cache that the file does not hold.
	sids    map[SessionRef]int64
	newSids map[SessionRef]int64
	// rx runs the statements of every message (rowexec.go), bound to the
	// transaction's connection; args holds their values.
	rx   *rowExec
	args rowArgs
	// emptied are the sids of sessions this transaction deleted chunks of,
	// which dropEmptied drops when nothing names them any more.
	emptied map[int64]bool
}

// newWriter returns the writer of transaction tx, with the shard's
// rowExec bound to tx's connection. Caller holds s.writeMu.
func (s *Shard) newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	if err := s.rx.bind(ctx, tx); err != nil {
		return nil, err
	}
	return &writer{parent: ctx, ctx: context.WithoutCancel(ctx), tx: tx, ws: s.ws, rx: &s.rx, dims: s.dims,
		bound: make(map[*sql.Stmt]*sql.Stmt, 16), nsDelta: map[string]int64{}, sids: s.sids}, nil
}

// sidCacheMax bounds the entries of a shard's sid cache: beyond it the
// cache starts over (an entry costs about 100 bytes; a miss, one indexed
// read).
const sidCacheMax = 1 << 16

// sid returns the sid of ref's session, adding the session to sessions
// when it has none yet.
func (w *writer) sid(ref SessionRef) (int64, error) {
	id, changed := w.newSids[ref]
	if !changed {
		id = w.sids[ref]
	}
	if id != 0 {
		return id, nil
	}
	err := w.st(w.ws.selectSid).QueryRowContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = w.st(w.ws.insertSession).ExecContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID); err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("session %s/%s/%s: %w", ref.Namespace, ref.SessionKey, ref.SessionID, err)
	}
	w.setSid(ref, id)
	return id, nil
}

func (w *writer) setSid(ref SessionRef, id int64) {
	if w.newSids == nil {
		w.newSids = map[SessionRef]int64{}
	}
	w.newSids[ref] = id
}

// emptiedKey adds to w.emptied the sessions of ref's key (of ref's
// session id only, when it has one).
func (w *writer) emptiedKey(ref SessionRef) error {
	var rows *sql.Rows
	var err error
	if ref.SessionID == "" {
		rows, err = w.st(w.ws.selectKeySids).QueryContext(w.ctx, ref.Namespace, ref.SessionKey)
	} else {
		rows, err = w.st(w.ws.selectSid).QueryContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID)
	}
	if err != nil {
		return err
	}
	for rows.Next() {
		var sid int64
		if err := rows.Scan(&sid); err != nil {
			rows.Close()
			return err
		}
		w.markEmptied(sid)
	}
	return rows.Close()
}

func (w *writer) markEmptied(sid int64) {
	if w.emptied == nil {
		w.emptied = map[int64]bool{}
	}
	w.emptied[sid] = true
}

// dropEmptied deletes the sessions rows of w.emptied that no message and
// no chunk names any more (a session deleted, a session's last chunks
// replaced by none, a file's or record's deleted).
func (w *writer) dropEmptied() error {
	for sid := range w.emptied {
		rows, err := w.st(w.ws.dropEmpty).QueryContext(w.ctx, sid)
		if err != nil {
			return err
		}
		for rows.Next() {
			var ref SessionRef
			if err := rows.Scan(&ref.Namespace, &ref.SessionKey, &ref.SessionID); err != nil {
				rows.Close()
				return err
			}
			w.setSid(ref, 0)
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	clear(w.emptied)
	return nil
}

// commitSids makes the committed transaction's session ids the cache's.
func (w *writer) commitSids() {
	if len(w.sids)+len(w.newSids) > sidCacheMax {
		clear(w.sids)
	}
	for ref, id := range w.newSids {
		if id == 0 {
			delete(w.sids, ref)
		} else {
			w.sids[ref] = id
		}
	}
}

// addKWOp records a keyword index change and hands its row to the counter.
func (w *writer) addKWOp(op kwOp) {
	w.kwOps = append(w.kwOps, op)
	if w.prep != nil {
		w.prep.add(op.doc)
	}
}

// alive returns the parent context's error, if any.
func (w *writer) alive() error { return w.parent.Err() }

// st returns the statement bound to the transaction.
func (w *writer) st(p *sql.Stmt) *sql.Stmt {
	if b, ok := w.bound[p]; ok {
		return b
	}
	b := w.tx.StmtContext(w.ctx, p)
	w.bound[p] = b
	return b
}

func (w *writer) close() {
	for _, b := range w.bound {
		b.Close()
	}
}

// Apply applies b in one transaction: DeleteSessions, Messages (upsert),
// Rechunk, then records b.Seq as the applied sequence when it is greater than
// the current one. It either applies everything or nothing. After the commit
// the in-memory vector index reflects the batch. When it fails because the
// vec0 table fails, the shard falls back to go-scan and Apply is retried once.
func (s *Shard) Apply(ctx context.Context, b Batch) (ApplyStats, error) {
	st, err := s.apply(ctx, b)
	if err != nil && s.vec0Failed(ctx, err) {
		st, err = s.apply(ctx, b)
	}
	if err != nil {
		return ApplyStats{}, fmt.Errorf("apply: %w", err)
	}
	return st, nil
}

func (s *Shard) apply(ctx context.Context, b Batch) (ApplyStats, error) {
	if err := s.check(); err != nil {
		return ApplyStats{}, err
	}
	if err := validateBatch(&b, s.dims); err != nil {
		return ApplyStats{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.check(); err != nil {
		return ApplyStats{}, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ApplyStats{}, err
	}
	defer tx.Rollback()
	w, err := s.newWriter(ctx, tx)
	if err != nil {
		return ApplyStats{}, err
	}
	defer w.close()
	if kw := s.kw.Load(); kw != nil { // counted now, posted after the commit (kwprep.go)
		w.prep = startKWPrep(kw)
		defer w.prep.wait()
	}
	stages := []struct {
		name string
		run  func() error
	}{
		{"delete", func() error {
			for _, ref := range b.DeleteSessions {
				if err := w.alive(); err != nil {
					return err
				}
				if err := w.deleteSession(ref); err != nil {
					return fmt.Errorf("delete session: %w", err)
				}
			}
			return nil
		}},
		{"messages", func() error {
			for i := range b.Messages {
				if i%64 == 0 {
					if err := w.alive(); err != nil {
						return err
					}
				}
				if err := w.upsertMessage(&b.Messages[i]); err != nil {
					return fmt.Errorf("message: %w", err)
				}
			}
			return nil
		}},
		{"rechunk", func() error {
			if err := w.readTails(b.Rechunk); err != nil {
				return fmt.Errorf("rechunk: %w", err)
			}
			for i := range b.Rechunk {
				if err := w.rechunk(&b.Rechunk[i]); err != nil {
					return fmt.Errorf("rechunk: %w", err)
				}
			}
			return nil
		}},
		{"files", func() error {
			for _, f := range b.DeleteFiles {
				if err := w.deleteFile(f.Namespace, f.Path, true); err != nil {
					return fmt.Errorf("delete file: %w", err)
				}
			}
			for i := range b.Files {
				if err := w.alive(); err != nil {
					return err
				}
				if err := w.upsertFile(&b.Files[i]); err != nil {
					return fmt.Errorf("file: %w", err)
				}
			}
			return nil
		}},
		{"records", func() error {
			for _, r := range b.DeleteRecords {
				if err := w.deleteDocChunks(r.Namespace, "records", r.Path, false); err != nil {
					return fmt.Errorf("delete record: %w", err)
				}
			}
			for i := range b.Records {
				r := b.Records[i]
				c := r.Chunk // a copy
				c.Source = "records"
				if r.MergeInto != "" {
					c.Path = r.MergeInto
				}
				if err := w.deleteDocChunks(c.Namespace, "records", c.Path, false); err != nil {
					return fmt.Errorf("record %s: %w", c.Path, err)
				}
				if err := w.insertChunk(&c); err != nil {
					return fmt.Errorf("record %s: %w", c.Path, err)
				}
			}
			return nil
		}},
		{"seq", func() error {
			if err := w.flushVectors(); err != nil {
				return err
			}
			if err := w.dropEmptied(); err != nil {
				return fmt.Errorf("sessions: %w", err)
			}
			if _, err := w.st(w.ws.setSeq).ExecContext(w.ctx, int64(b.Seq)); err != nil {
				return fmt.Errorf("applied seq: %w", err)
			}
			return nil
		}},
	}
	for _, stage := range stages {
		if err := stage.run(); err != nil {
			return ApplyStats{}, err
		}
		if failpoint.Enabled && stage.name == "rechunk" { // tests only: build tag failpoints
			failpoint.Inject(failpoint.MidTx)
		}
		if s.applyHook != nil {
			if err := s.applyHook(stage.name); err != nil {
				return ApplyStats{}, err
			}
		}
	}
	s.visible.Lock() // until the indexes hold the batch (Stats counts what searches find)
	defer s.visible.Unlock()
	if err := tx.Commit(); err != nil {
		return ApplyStats{}, fmt.Errorf("commit: %w", err)
	}
	w.commitSids()
	s.ckpt.kick()
	if b.Committed != nil {
		b.Committed()
	}
	if s.applyHook != nil {
		_ = s.applyHook("commit") // committed: the hook only observes
	}
	// The vector index and the keyword index are independent (each its
	// own lock): the vectors go in on a goroutine of their own while this
	// one posts the keyword index, about a third and two thirds of this
	// stage for a batch of new messages.
	var wg conc.WaitGroup
	wg.Go(func() { s.index.apply(w.ops) })
	s.sizes.add(w.nsDelta)
	s.speakers.add(b.Messages)
	var toks []kwTokens
	var tokErr error
	if w.prep != nil {
		toks, tokErr = w.prep.wait()
	}
	s.applyKeywordIndex(w.kwOps, toks, tokErr) // it posts the batch's chunks
	wg.Wait()
	// Last: a search that reads the applied sequence finds the batch in
	// the indexes (the max, as sqlSetSeq's).
	if b.Seq > s.applied.Load() {
		s.applied.Store(b.Seq)
	}
	if s.applyHook != nil {
		_ = s.applyHook("indexes")
	}
	return w.stats, nil
}

// validateBatch checks b before any write. A chunk's namespace and session
// fields may be left empty (they are taken from its SessionChunks) but must
// not differ. It does not modify b.
func validateBatch(b *Batch, dims int) error {
	if b.Seq > math.MaxInt64 {
		return fmt.Errorf("seq %d beyond int64: %w", b.Seq, ErrInvalidBatch)
	}
	for _, r := range b.Records {
		if r.Chunk.ID == "" || r.Chunk.Path == "" {
			return fmt.Errorf("record chunk without id or record id: %w", ErrInvalidBatch)
		}
		if r.Chunk.Vector != nil && len(r.Chunk.Vector) != dims {
			return fmt.Errorf("record %s: vector of %d, shard %d: %w", r.Chunk.Path, len(r.Chunk.Vector), dims, ErrDims)
		}
	}
	for _, f := range b.Files {
		for _, c := range f.Chunks {
			if c.ID == "" {
				return fmt.Errorf("chunk of file %s: empty id: %w", f.Path, ErrInvalidBatch)
			}
			if c.Vector != nil && len(c.Vector) != dims {
				return fmt.Errorf("chunk %s: vector of %d, shard %d: %w", c.ID, len(c.Vector), dims, ErrDims)
			}
		}
	}
	for i := range b.Rechunk {
		sc := &b.Rechunk[i]
		ref := sc.Session
		for j := range sc.Chunks {
			c := &sc.Chunks[j]
			if c.ID == "" {
				return fmt.Errorf("chunk %d of session %s/%s/%s: empty id: %w", j, ref.Namespace, ref.SessionKey, ref.SessionID, ErrInvalidBatch)
			}
			same := func(field, want, name string) error {
				if field != "" && field != want {
					return fmt.Errorf("chunk %s: %s %q differs from its session's %q: %w", c.ID, name, field, want, ErrInvalidBatch)
				}
				return nil
			}
			if err := errors.Join(
				same(c.Namespace, ref.Namespace, "namespace"),
				same(c.SessionKey, ref.SessionKey, "session key"),
				same(c.SessionID, ref.SessionID, "session id")); err != nil {
				return err
			}
			if c.Vector != nil && len(c.Vector) != dims {
				return fmt.Errorf("chunk %s: vector of %d, shard %d: %w", c.ID, len(c.Vector), dims, ErrDims)
			}
		}
	}
	return nil
}

// deletedChunk is a row returned by a DELETE ... RETURNING on chunks; text
// and words are its FTS values (fts_body, fts_words) for the 'delete', ctx
// (fts_ctx) what the keyword index holds besides.
type deletedChunk struct {
	rowid     int64
	text      string
	words     sql.NullString
	ctx       string
	sk        string // the session key token it was indexed with (chunks.sk)
	hasVector bool
	sid       int64
}

// deleteSession removes the messages and chunks (with their FTS rows and
// vectors) of one session, or of every session of the key when SessionID is
// empty.
func (w *writer) deleteSession(ref SessionRef) error {
	var err error
	if ref.SessionID == "" {
		_, err = w.st(w.ws.deleteMessagesKey).ExecContext(w.ctx, ref.Namespace, ref.SessionKey)
	} else {
		_, err = w.st(w.ws.deleteMessagesSession).ExecContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID)
	}
	if err != nil {
		return err
	}
	var rows *sql.Rows
	if ref.SessionID == "" {
		rows, err = w.st(w.ws.deleteChunksKey).QueryContext(w.ctx, ref.Namespace, ref.SessionKey)
	} else {
		rows, err = w.st(w.ws.deleteChunksSession).QueryContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID)
	}
	if err != nil {
		return err
	}
	if err := w.dropDeleted(ref.Namespace, rows); err != nil {
		return err
	}
	return w.emptiedKey(ref) // the sessions that had messages only
}

// dropChunkIndexes removes the FTS row and vector of a deleted chunk.
func (w *writer) dropChunkIndexes(ns string, d deletedChunk) error {
	if _, err := w.st(w.ws.ftsDelete).ExecContext(w.ctx, d.rowid, d.text, nsToken(ns), d.words, d.sk); err != nil {
		return fmt.Errorf("fts delete: %w", err)
	}
	w.addKWOp(kwOp{doc: kwDoc{rowid: d.rowid, ns: ns, body: d.text, words: d.words.String, ctx: d.ctx}})
	if d.hasVector {
		if err := w.flushVectors(); err != nil {
			return err
		}
		if _, err := w.st(w.ws.vecDelete).ExecContext(w.ctx, d.rowid); err != nil {
			return fmt.Errorf("vec delete: %w", err)
		}
		w.ops = append(w.ops, indexOp{ns: ns, rowid: d.rowid})
	}
	w.stats.ChunksDeleted++
	w.nsDelta[ns]--
	w.markEmptied(d.sid)
	return nil
}

func (w *writer) upsertMessage(m *Message) error {
	sid, err := w.sid(SessionRef{Namespace: m.Namespace, SessionKey: m.SessionKey, SessionID: m.SessionID})
	if err != nil {
		return err
	}
	a := &w.args
	a.reset()
	a.int(sid)
	a.texts(m.Namespace, m.SessionKey, m.SessionID)
	a.int(m.Seq)
	a.texts(m.ID, m.Role, m.Speaker, m.Text)
	a.time(m.Time)
	if _, err := w.rx.exec(rxUpsertMessage, a); err != nil {
		return err
	}
	w.stats.Messages++
	return nil
}

// storedChunk is a stored chunk of a session's tail that rechunk keeps or
// deletes.
type storedChunk struct {
	deletedChunk
	id string
}

// readTails reads the stored tails of the sessions of rcs (the chunks from
// From on, as sqlSelectTail) with a statement per tailSessionsPerQuery
// sessions instead of one a session, into w.tails. Only a session's first
// SessionChunks is read ahead: a second one's tail depends on the first's
// changes, so tail reads it when its turn comes.
func (w *writer) readTails(rcs []SessionChunks) error {
	if len(rcs) < 2 {
		return nil
	}
	reqs := make([]TailRequest, 0, len(rcs))
	seen := make(map[SessionRef]bool, len(rcs))
	for i := range rcs {
		ref := rcs[i].Session
		if seen[ref] {
			continue
		}
		seen[ref] = true
		reqs = append(reqs, TailRequest{Session: ref, Seq: rcs[i].From})
	}
	w.tails = make(map[SessionRef][]storedChunk, len(reqs))
	for start := 0; start < len(reqs); start += tailSessionsPerQuery {
		part := reqs[start:min(start+tailSessionsPerQuery, len(reqs))]
		rows, err := w.tx.QueryContext(w.ctx, tailValues(len(part))+`
			SELECT s.i, c.rowid, c.id, c.fts_body, c.fts_words, c.fts_ctx, c.sk, c.has_vector, c.sid FROM s
			CROSS JOIN sessions ss ON ss.namespace = s.ns AND ss.session_key = s.k AND ss.session_id = s.id
			CROSS JOIN chunks c ON c.sid = ss.sid AND c.seq_start >= s.seq`,
			tailArgs(0, part)...)
		if err != nil {
			return err
		}
		for _, r := range part {
			w.tails[r.Session] = nil
		}
		for rows.Next() {
			var i int
			var e storedChunk
			if err := rows.Scan(&i, &e.rowid, &e.id, &e.text, &e.words, &e.ctx, &e.sk, &e.hasVector, &e.sid); err != nil {
				rows.Close()
				return err
			}
			ref := part[i].Session
			w.tails[ref] = append(w.tails[ref], e)
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// tail returns the stored chunks of sc's session from sc.From on: those
// readTails read, once, or else read now.
func (w *writer) tail(sc *SessionChunks) ([]storedChunk, error) {
	ref := sc.Session
	if t, ok := w.tails[ref]; ok {
		delete(w.tails, ref) // a later rechunk of the session reads it again
		return t, nil
	}
	rows, err := w.st(w.ws.selectTail).QueryContext(w.ctx, ref.Namespace, ref.SessionKey, ref.SessionID, sc.From)
	if err != nil {
		return nil, err
	}
	var tail []storedChunk
	for rows.Next() {
		var e storedChunk
		if err := rows.Scan(&e.rowid, &e.id, &e.text, &e.words, &e.ctx, &e.sk, &e.hasVector, &e.sid); err != nil {
			rows.Close()
			return nil, err
		}
		tail = append(tail, e)
	}
	return tail, rows.Close()
}

// rechunk replaces the tail of one session's chunks (see SessionChunks).
func (w *writer) rechunk(sc *SessionChunks) error {
	ref := sc.Session
	tail, err := w.tail(sc)
	if err != nil {
		return err
	}
	existing := make(map[string]storedChunk, len(tail))
	if len(tail) > 0 {
		keep := make(map[string]bool, len(sc.Chunks))
		for i := range sc.Chunks {
			keep[sc.Chunks[i].ID] = true
		}
		for _, e := range tail {
			if keep[e.id] {
				existing[e.id] = e
				continue
			}
			if _, err := w.st(w.ws.deleteChunk).ExecContext(w.ctx, e.rowid); err != nil {
				return fmt.Errorf("delete chunk %s: %w", e.id, err)
			}
			if err := w.dropChunkIndexes(ref.Namespace, e.deletedChunk); err != nil {
				return err
			}
		}
	}
	for i := range sc.Chunks {
		if i%64 == 0 {
			if err := w.alive(); err != nil {
				return err
			}
		}
		if sc.Chunks[i].SeqStart < sc.From {
			// Outside the tail read above: a stored chunk of its id would
			// not be found, and it would be stored twice.
			return fmt.Errorf("chunk %s starts at seq %d, before From %d", sc.Chunks[i].ID, sc.Chunks[i].SeqStart, sc.From)
		}
		cc := sc.Chunks[i] // a copy: the caller's batch is not modified
		cc.Namespace, cc.SessionKey, cc.SessionID = ref.Namespace, ref.SessionKey, ref.SessionID
		c := &cc
		if e, ok := existing[c.ID]; ok {
			// Kept: it keeps its vector; one arriving for a chunk still
			// waiting is written.
			if !e.hasVector && c.Vector != nil {
				if err := w.writeVector(e.rowid, c, true); err != nil {
					return err
				}
			}
			continue
		}
		if err := w.insertChunk(c); err != nil {
			return fmt.Errorf("chunk %s: %w", c.ID, err)
		}
	}
	return nil
}

// insertChunk inserts c with its FTS row and, when it has one, its vector.
// Its id is not looked up (no index names a chunk by id: see ChunkRef). A
// chunk id hashes its scope and position (chunker), so a stored chunk of
// the same id is the same chunk of the same session, file or record, which
// the caller has deleted (a file or record replaced) or kept (a session
// tail: rechunk).
func (w *writer) insertChunk(c *Chunk) error {
	fi := newFTSIndexed(c.Text) // the CJK-segmented form (segment.go)
	cseg, cbody, ccjk := contextIndexForm(c.Context)
	if ccjk {
		fi.ver = tokenizerVersion
	}
	sid, err := w.sid(SessionRef{Namespace: c.Namespace, SessionKey: c.SessionKey, SessionID: c.SessionID})
	if err != nil {
		return err
	}
	a := &w.args
	a.reset()
	a.int(sid)
	a.texts(c.ID, c.Namespace, c.Source, c.SessionKey, c.SessionID)
	a.int(c.SeqStart)
	a.int(c.SeqEnd)
	a.int(int64(c.Part))
	a.text(c.Text)
	a.time(c.TimeStart)
	a.time(c.TimeEnd)
	a.bool(c.Vector != nil)
	a.texts(c.Path, c.DirPath)
	a.value(fi.seg)
	a.value(fi.words)
	a.int(fi.ver)
	a.text(c.Context)
	a.value(cseg)
	rowid, err := w.rx.exec(rxInsertChunk, a)
	if err != nil {
		return err
	}
	a.reset()
	a.int(rowid)
	a.text(fi.body)
	a.hexToken(nsTokenPrefix, c.Namespace) // nsToken, written in place
	a.value(fi.words)
	a.hexToken(skTokenPrefix, c.SessionKey)
	if _, err := w.rx.exec(rxFTSInsert, a); err != nil {
		return fmt.Errorf("fts insert: %w", err)
	}
	words, _ := fi.words.(string)
	w.addKWOp(kwOp{add: true, doc: kwDoc{rowid: rowid, id: c.ID, ns: c.Namespace, sessionKey: c.SessionKey,
		sessionID: c.SessionID, source: c.Source, dirPath: c.DirPath, tsStart: nanos(c.TimeStart), tsEnd: nanos(c.TimeEnd),
		head: c.Text, body: fi.body, words: words, ctx: cbody}})
	w.stats.ChunksInserted++
	w.nsDelta[c.Namespace]++
	if c.Vector != nil {
		return w.writeVector(rowid, c, false)
	}
	return nil
}

// writeVector stores c.Vector for the chunk at rowid and records the index
// addition; setFlag also marks the row as having a vector.
func (w *writer) writeVector(rowid int64, c *Chunk, setFlag bool) error {
	if w.ws.bulk != nil {
		w.vecQueue = append(w.vecQueue, queuedVector{rowid: rowid, vec: c.Vector})
	} else if err := w.insertVec0(queuedVector{rowid: rowid, vec: c.Vector}); err != nil {
		return err
	}
	if setFlag {
		if _, err := w.st(w.ws.setHasVec).ExecContext(w.ctx, rowid); err != nil {
			return err
		}
	}
	w.ops = append(w.ops, indexOp{add: true, ns: c.Namespace, rowid: rowid, entry: vecEntry{
		id: c.ID, sessionKey: c.SessionKey, sessionID: c.SessionID,
		tsStart: nanos(c.TimeStart), tsEnd: nanos(c.TimeEnd), vec: c.Vector,
		source: c.Source, dirPath: c.DirPath,
	}})
	w.stats.VectorsWritten++
	return nil
}

// nsToken is the namespace as a single FTS5 token of the chunks_fts ns column;
// it must equal the generated column chunks.ns.
func nsToken(ns string) string { return hexToken(nsTokenPrefix, ns) }

// skToken is a session key as a single FTS5 token of the chunks_fts sk
// column (migration 0007); it must equal the generated column chunks.sk.
func skToken(sessionKey string) string { return hexToken(skTokenPrefix, sessionKey) }

// The prefixes of nsToken and skToken.
const (
	nsTokenPrefix = 'n'
	skTokenPrefix = 'k'
)

// hexToken is prefix, the lower-case hex of s, and '0': one FTS5 token that
// no word and no other value can be.
func hexToken(prefix byte, s string) string {
	return string(appendHexToken(make([]byte, 0, 2+2*len(s)), prefix, s))
}

// appendHexToken appends hexToken(prefix, s) to b.
func appendHexToken(b []byte, prefix byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, prefix)
	for i := 0; i < len(s); i++ {
		b = append(b, hexdigits[s[i]>>4], hexdigits[s[i]&0xf])
	}
	return append(b, '0')
}

// AppliedSeq returns the last stream sequence recorded by Apply (0 for none).
// A shard's own writer keeps it in memory (a search asks for it each time);
// a read-only shard, which another process may be writing, reads it from
// the file.
func (s *Shard) AppliedSeq(ctx context.Context) (uint64, error) {
	if err := s.check(); err != nil {
		return 0, fmt.Errorf("applied seq: %w", err)
	}
	if !s.readOnly {
		return s.applied.Load(), nil
	}
	return readAppliedSeq(ctx, s.r)
}

// readAppliedSeq reads the applied sequence from the file.
func readAppliedSeq(ctx context.Context, db *sql.DB) (uint64, error) {
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'applied_seq'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("applied seq: %w", err)
	}
	return uint64(v), nil
}

// deleteFile removes a memory file's chunks with their FTS rows and vectors,
// and with row also its files row.
func (w *writer) deleteFile(ns, path string, row bool) error {
	return w.deleteDocChunks(ns, "files", path, row)
}

// deleteDocChunks removes the chunks of one file or record (source, path),
// with their FTS rows and vectors, and with row a file's files row.
func (w *writer) deleteDocChunks(ns, source, path string, row bool) error {
	rows, err := w.tx.QueryContext(w.ctx, sqlDeleteFileChunks, ns, path, source)
	if err != nil {
		return err
	}
	if err := w.dropDeleted(ns, rows); err != nil {
		return err
	}
	if row {
		_, err = w.tx.ExecContext(w.ctx, sqlDeleteFile, ns, path)
	}
	return err
}

// upsertFile stores f and replaces all of its chunks.
func (w *writer) upsertFile(f *FileUpsert) error {
	if err := w.deleteFile(f.Namespace, f.Path, false); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, sqlUpsertFile, f.Namespace, f.Path, f.DirPath, f.Hash, f.Content); err != nil {
		return err
	}
	for i := range f.Chunks {
		c := f.Chunks[i] // a copy: the caller's batch is not modified
		c.Namespace, c.Path, c.DirPath, c.Source = f.Namespace, f.Path, f.DirPath, "files"
		if err := w.insertChunk(&c); err != nil {
			return fmt.Errorf("chunk %s: %w", c.ID, err)
		}
	}
	return nil
}

// dropDeleted reads the rows of a DELETE ... RETURNING rowid, fts_body,
// fts_words, fts_ctx, sk, has_vector, sid on chunks and removes their FTS
// rows, keyword index entries and vectors.
func (w *writer) dropDeleted(ns string, rows *sql.Rows) error {
	var dels []deletedChunk
	for rows.Next() {
		var d deletedChunk
		if err := rows.Scan(&d.rowid, &d.text, &d.words, &d.ctx, &d.sk, &d.hasVector, &d.sid); err != nil {
			rows.Close()
			return err
		}
		dels = append(dels, d)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, d := range dels {
		if err := w.dropChunkIndexes(ns, d); err != nil {
			return err
		}
	}
	return nil
}
