package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SessionChunkSpans returns the stored chunks of exactly the session ref
// (SessionID "" names the session whose id is empty), ordered by SeqStart,
// then Part.
func (s *Shard) SessionChunkSpans(ctx context.Context, ref SessionRef) ([]ChunkSpan, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("session chunk spans: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, seq_start, seq_end, part FROM chunks
		WHERE sid = `+sqlSidOf+`
		ORDER BY seq_start, part`, ref.Namespace, ref.SessionKey, ref.SessionID)
	if err != nil {
		return nil, fmt.Errorf("session chunk spans: %w", err)
	}
	defer rows.Close()
	var out []ChunkSpan
	for rows.Next() {
		var c ChunkSpan
		if err := rows.Scan(&c.ID, &c.SeqStart, &c.SeqEnd, &c.Part); err != nil {
			return nil, fmt.Errorf("session chunk spans: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session chunk spans: %w", err)
	}
	return out, nil
}

// SessionMessages returns the messages of exactly the session ref with
// seq >= fromSeq, ordered by seq, at most limit of them (0: all).
func (s *Shard) SessionMessages(ctx context.Context, ref SessionRef, fromSeq int64, limit int) ([]Message, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	return queryMessages(ctx, s.r, ref, `SELECT seq, id, role, speaker, text, ts FROM messages
		WHERE sid = `+sqlSidOf+` AND seq >= ?
		ORDER BY seq LIMIT ?`, fromSeq, sqlLimit(limit))
}

// rowsQuerier is a *sql.DB or a *sql.Tx.
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryMessages runs a SELECT seq, id, role, speaker, text, ts on messages
// whose first three parameters are ref's, followed by args.
func queryMessages(ctx context.Context, db rowsQuerier, ref SessionRef, query string, args ...any) ([]Message, error) {
	rows, err := db.QueryContext(ctx, query, append([]any{ref.Namespace, ref.SessionKey, ref.SessionID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m := Message{Namespace: ref.Namespace, SessionKey: ref.SessionKey, SessionID: ref.SessionID}
		var ts sql.NullInt64
		if err := rows.Scan(&m.Seq, &m.ID, &m.Role, &m.Speaker, &m.Text, &ts); err != nil {
			return nil, fmt.Errorf("session messages: %w", err)
		}
		m.Time = timeOf(ts)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	return out, nil
}

// SessionMessagesBefore returns up to n stored messages of a session with
// seq < beforeSeq, the nearest ones, in seq order: what gives a re-chunked
// tail's first chunks their context.
func (s *Shard) SessionMessagesBefore(ctx context.Context, ref SessionRef, beforeSeq int64, n int) ([]Message, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	out, err := queryMessages(ctx, s.r, ref, `SELECT seq, id, role, speaker, text, ts FROM messages
		WHERE sid = `+sqlSidOf+` AND seq < ?
		ORDER BY seq DESC LIMIT ?`, beforeSeq, n)
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// sqlLimit turns limit into a SQL LIMIT value: 0 or less means no limit.
func sqlLimit(limit int) int64 {
	if limit <= 0 {
		return -1
	}
	return int64(limit)
}

// maxParams bounds the parameters of one IN (...) list.
const maxParams = 500

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// Chunks returns the stored chunks of refs, keyed by id; a ref whose row
// no longer holds its id (see ChunkRef) is absent. MessageIDs lists, in seq
// order, the non-empty ids of the messages
// of the chunk's session with seq in [SeqStart, SeqEnd]. A session chunk of
// one message (every chunk the chunker makes today) also carries that
// message whole in Message; when it is a later piece of a split message,
// UnitID is the id of the message's first piece. All reads share one
// snapshot.
func (s *Shard) Chunks(ctx context.Context, refs []ChunkRef) (map[string]ChunkRecord, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	out := make(map[string]ChunkRecord, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	ctx = boundedRead(ctx)
	if len(refs) <= maxParams {
		// One statement is one snapshot: enough unless a chunk needs a
		// second read (a window's message ids, a later piece's first).
		if err := readChunks(ctx, s.r, refs, out); err != nil {
			return nil, fmt.Errorf("chunks: %w", err)
		}
		second := false
		for _, c := range out {
			second = second || needsSecondRead(c)
		}
		if !second {
			return out, nil
		}
		clear(out) // read again, all in one transaction
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	defer tx.Rollback()
	for start := 0; start < len(refs); start += maxParams {
		if err := readChunks(ctx, tx, refs[start:min(start+maxParams, len(refs))], out); err != nil {
			return nil, fmt.Errorf("chunks: %w", err)
		}
	}
	// Multi-message chunks (windows of an older memindex, read-only) list
	// their message ids; later pieces of a split message name the first.
	var first *sql.Stmt
	defer func() {
		if first != nil {
			first.Close()
		}
	}()
	for id, c := range out {
		switch {
		case !needsSecondRead(c):
			continue
		case c.Message == nil:
			ms, err := queryMessages(ctx, tx, SessionRef{Namespace: c.Namespace, SessionKey: c.SessionKey, SessionID: c.SessionID},
				`SELECT seq, id, role, speaker, text, ts FROM messages
				WHERE sid = `+sqlSidOf+` AND seq BETWEEN ? AND ? ORDER BY seq`, c.SeqStart, c.SeqEnd)
			if err != nil {
				return nil, fmt.Errorf("chunks: %w", err)
			}
			for _, m := range ms {
				if m.ID != "" {
					c.MessageIDs = append(c.MessageIDs, m.ID)
				}
			}
		case c.Part > 0:
			if first == nil {
				if first, err = tx.PrepareContext(ctx, `SELECT id FROM chunks
					WHERE sid = `+sqlSidOf+` AND seq_start = ? AND part = 0 AND source = 'sessions'`); err != nil {
					return nil, fmt.Errorf("chunks: %w", err)
				}
			}
			var id0 string
			switch err := first.QueryRowContext(ctx, c.Namespace, c.SessionKey, c.SessionID, c.SeqStart).Scan(&id0); {
			case err == nil:
				c.UnitID = id0
			case !errors.Is(err, sql.ErrNoRows):
				return nil, fmt.Errorf("chunks: first piece: %w", err)
			}
		}
		out[id] = c
	}
	return out, tx.Commit()
}

// ChunksByID is Chunks for chunks known by id alone. No index names a
// chunk by its id (see ChunkRef), so it scans every chunk row of the
// shard: for tests and tools, never a search's or a batch's path.
func (s *Shard) ChunksByID(ctx context.Context, ids []string) (map[string]ChunkRecord, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("chunks by id: %w", err)
	}
	refs, err := chunkRefs(ctx, s.r, ids)
	if err != nil {
		return nil, fmt.Errorf("chunks by id: %w", err)
	}
	return s.Chunks(ctx, refs)
}

// chunkRefs names the stored chunks of ids by their rows, scanning chunks
// (ChunksByID); an id not stored has none.
func chunkRefs(ctx context.Context, db queryer, ids []string) ([]ChunkRef, error) {
	var refs []ChunkRef
	for start := 0; start < len(ids); start += maxParams {
		part := ids[start:min(start+maxParams, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := db.QueryContext(ctx, `SELECT id, rowid FROM chunks WHERE id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var r ChunkRef
			if err := rows.Scan(&r.ID, &r.Row); err != nil {
				rows.Close()
				return nil, err
			}
			refs = append(refs, r)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// needsSecondRead says Chunks reads more for c than readChunks did: the
// message ids of a multi-message window (readChunks joined the message of
// a one-message chunk, when stored), or the first piece of a split message.
func needsSecondRead(c ChunkRecord) bool {
	return c.Source == "sessions" && ((c.Message == nil && c.SeqStart != c.SeqEnd) || c.Part > 0)
}

// readChunks reads the chunks of refs (at most maxParams) into out, a
// session chunk of one message with that message (whole) and its id; a
// row that holds another id than its ref's is left out.
func readChunks(ctx context.Context, tx queryer, refs []ChunkRef, out map[string]ChunkRecord) error {
	args := make([]any, len(refs))
	want := make(map[ChunkRef]bool, len(refs))
	for i, r := range refs {
		args[i] = r.Row
		want[r] = true
	}
	rows, err := tx.QueryContext(ctx, `SELECT c.rowid, c.id, c.namespace, c.source, c.session_key, c.session_id,
		c.seq_start, c.seq_end, c.part, c.text, c.context, c.ts_start, c.ts_end, c.path, c.dir_path, coalesce(c.fts_seg, ''),
		m.seq, m.id, m.role, m.speaker, m.text, m.ts
		FROM chunks c LEFT JOIN messages m ON c.source = 'sessions' AND c.seq_start = c.seq_end
			AND m.sid = c.sid AND m.seq = c.seq_start
		WHERE c.rowid IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c ChunkRecord
		var ts0, ts1, mts sql.NullInt64
		var mseq sql.NullInt64
		var mid, mrole, mspeaker, mtext sql.NullString
		var row int64
		if err := rows.Scan(&row, &c.ID, &c.Namespace, &c.Source, &c.SessionKey, &c.SessionID,
			&c.SeqStart, &c.SeqEnd, &c.Part, &c.Text, &c.Context, &ts0, &ts1, &c.Path, &c.DirPath, &c.ftsSeg,
			&mseq, &mid, &mrole, &mspeaker, &mtext, &mts); err != nil {
			return err
		}
		if !want[ChunkRef{ID: c.ID, Row: row}] {
			continue // the row holds a newer chunk
		}
		c.TimeStart, c.TimeEnd = timeOf(ts0), timeOf(ts1)
		if mseq.Valid {
			c.Message = &Message{Namespace: c.Namespace, SessionKey: c.SessionKey, SessionID: c.SessionID, Seq: mseq.Int64,
				ID: mid.String, Role: mrole.String, Speaker: mspeaker.String, Text: mtext.String, Time: timeOf(mts)}
			if mid.String != "" {
				c.MessageIDs = []string{mid.String}
			}
		}
		out[c.ID] = c
	}
	return rows.Err()
}

// Stats' session and namespace counts go through the sessions table (one
// row a session, whose sid keys the indexes of messages and chunks): a
// session counts when a message has its sid, a namespace when a message or
// a chunk has the sid of one of its sessions. Scans of messages and
// chunks, as they were, took 0.4–0.8 s each at 1M chunks (20,000
// sessions; sqlite3 shell, the search bench's shard), at every status and
// metrics scrape; these are an index probe a session, 45 and 15 ms there
// (TestStatsCountsAsFullScans compares them with the scans).
const (
	sqlStatsSessions   = `SELECT count(*) FROM sessions s WHERE EXISTS (SELECT 1 FROM messages m WHERE m.sid = s.sid)`
	sqlStatsNamespaces = `SELECT count(DISTINCT s.namespace) FROM sessions s
		WHERE EXISTS (SELECT 1 FROM messages m WHERE m.sid = s.sid) OR EXISTS (SELECT 1 FROM chunks c WHERE c.sid = s.sid)`
)

// Stats counts what the shard holds, from one snapshot.
func (s *Shard) Stats(ctx context.Context) (Stats, error) {
	if err := s.check(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	defer tx.Rollback()
	var st Stats
	var seq, oldest int64
	// The transaction's snapshot is taken at its first read: take it while
	// no commit is waiting for the in-memory indexes (Shard.visible), so
	// the counts are of rows searches find.
	s.visible.RLock()
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'applied_seq'`).Scan(&seq)
	s.visible.RUnlock()
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	for _, q := range []struct {
		sql string
		dst any
	}{
		{`SELECT count(*) FROM messages`, &st.Messages},
		{`SELECT count(*) FROM chunks`, &st.Chunks},
		{sqlStatsSessions, &st.Sessions},
		{sqlStatsNamespaces, &st.Namespaces},
		{`SELECT count(*) FROM chunks WHERE has_vector = 0`, &st.VectorsWaiting},
		{`SELECT ifnull(min(created_at), 0) FROM chunks WHERE has_vector = 0`, &oldest},
	} {
		if err := tx.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return Stats{}, fmt.Errorf("stats: %w", err)
		}
	}
	st.AppliedSeq = uint64(seq)
	if oldest > 0 {
		st.OldestWaiting = time.Unix(oldest, 0)
	}
	st.VectorIndexBytes = s.index.bytes()
	if kw := s.kw.Load(); kw != nil {
		st.KeywordIndex, st.KeywordIndexBytes = "memory", kw.stats().bytes
	} else {
		st.KeywordIndex = "fts5: " + s.kwAbsent()
	}
	return st, tx.Commit()
}

// FileHash returns the content hash stored for memory file path of ns, and
// whether the file is stored.
func (s *Shard) FileHash(ctx context.Context, ns, path string) (string, bool, error) {
	if err := s.check(); err != nil {
		return "", false, fmt.Errorf("file hash: %w", err)
	}
	var h string
	err := s.r.QueryRowContext(ctx, `SELECT content_hash FROM files WHERE namespace = ? AND path = ?`, ns, path).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("file hash: %w", err)
	}
	return h, true, nil
}

// FileContent returns memory file path of ns as stored, and whether it is.
func (s *Shard) FileContent(ctx context.Context, ns, path string) (string, bool, error) {
	if err := s.check(); err != nil {
		return "", false, fmt.Errorf("file content: %w", err)
	}
	var c string
	err := s.r.QueryRowContext(ctx, `SELECT content FROM files WHERE namespace = ? AND path = ?`, ns, path).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("file content: %w", err)
	}
	return c, true, nil
}

// boundedRead returns ctx without its cancellation, for a read of a few
// rows on a search's path (its chunks, the vectors it rescores) whose
// caller checked ctx just before: go-sqlite3 steps each row of a
// cancellable context on a goroutine of its own and database/sql watches
// its rows with another, which costs more than such a read.
func boundedRead(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// WaitIndexed returns once no commit is waiting for the in-memory indexes
// to hold it. Between a commit and its index updates a search's legs can
// name chunks the commit removed (the keyword index ranks the rows it
// held); a search that found its candidates gone waits for this before it
// asks its legs again, so that they answer from the state the commit left.
func (s *Shard) WaitIndexed() {
	s.visible.RLock()
	s.visible.RUnlock()
}
