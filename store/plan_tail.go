package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Set-based reads for planning a batch: the consumer re-chunks each session
// a batch touches from its tail, and asking for every session's tail in a
// few statements, rather than three statements a session, is what keeps a
// batch over a thousand interleaved sessions cheap. Each read is one
// snapshot.

// TailRequest names one session of a batch being planned and a message seq
// in it (what the seq means is the method's).
type TailRequest struct {
	Session SessionRef
	Seq     int64
}

// SessionTail is what SessionTailMessages returns for one session.
type SessionTail struct {
	// Before are up to n stored messages before the request's seq, the
	// nearest ones, in seq order.
	Before []Message
	// From are the stored messages at or after the request's seq, in seq
	// order.
	From []Message
}

// tailSessionsPerQuery bounds the sessions of one statement (five
// parameters each).
const tailSessionsPerQuery = 200

// SessionTailSpans returns, for each request (Seq: the session's first new
// message), the stored chunks of exactly that session from the last one
// that starts before Seq (at a seq above 0) on, ordered by SeqStart, then
// Part; all of them when none does. For a read-write shard, whose session
// chunks each cover one message (see ErrOldUnits), these are the chunks a
// re-chunking from the tail can keep or replace, and the tail decided on
// them is the one all of the session's chunks decide: a long session costs
// no more to plan than a short one.
func (s *Shard) SessionTailSpans(ctx context.Context, reqs []TailRequest) ([][]ChunkSpan, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("session tail spans: %w", err)
	}
	out := make([][]ChunkSpan, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("session tail spans: %w", err)
	}
	defer tx.Rollback()
	for start := 0; start < len(reqs); start += tailSessionsPerQuery {
		part := reqs[start:min(start+tailSessionsPerQuery, len(reqs))]
		rows, err := tx.QueryContext(ctx, tailValues(len(part))+`
			SELECT s.i, c.id, c.seq_start, c.seq_end, c.part FROM s
			CROSS JOIN sessions ss ON ss.namespace = s.ns AND ss.session_key = s.k AND ss.session_id = s.id
			CROSS JOIN chunks c ON c.sid = ss.sid
			AND c.seq_start >= ifnull((SELECT max(x.seq_start) FROM chunks x
				WHERE x.sid = ss.sid AND x.seq_start > 0 AND x.seq_start < s.seq), -9223372036854775808)
			ORDER BY s.i, c.seq_start, c.part`, tailArgs(start, part)...)
		if err != nil {
			return nil, fmt.Errorf("session tail spans: %w", err)
		}
		for rows.Next() {
			var i int
			var c ChunkSpan
			if err := rows.Scan(&i, &c.ID, &c.SeqStart, &c.SeqEnd, &c.Part); err != nil {
				rows.Close()
				return nil, fmt.Errorf("session tail spans: %w", err)
			}
			out[i] = append(out[i], c)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("session tail spans: %w", err)
		}
	}
	return out, tx.Commit()
}

// SessionTailMessages returns, for each request (Seq: where the session is
// re-chunked from), the session's stored messages from Seq on and up to
// before of those before it: the same as SessionMessages(ref, Seq, 0) and
// SessionMessagesBefore(ref, Seq, before) of every request, in a few
// statements and one snapshot.
func (s *Shard) SessionTailMessages(ctx context.Context, reqs []TailRequest, before int) ([]SessionTail, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("session tail messages: %w", err)
	}
	out := make([]SessionTail, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("session tail messages: %w", err)
	}
	defer tx.Rollback()
	// The lower bound is the seq of the before-th message before Seq, or
	// every earlier message when there are fewer.
	bound := `s.seq`
	if before > 0 {
		bound = fmt.Sprintf(`ifnull((SELECT x.seq FROM messages x
			WHERE x.sid = ss.sid AND x.seq < s.seq
			ORDER BY x.seq DESC LIMIT 1 OFFSET %d), -9223372036854775808)`, before-1)
	}
	for start := 0; start < len(reqs); start += tailSessionsPerQuery {
		part := reqs[start:min(start+tailSessionsPerQuery, len(reqs))]
		rows, err := tx.QueryContext(ctx, tailValues(len(part))+`
			SELECT s.i, s.seq, m.seq, m.id, m.role, m.speaker, m.text, m.ts FROM s
			CROSS JOIN sessions ss ON ss.namespace = s.ns AND ss.session_key = s.k AND ss.session_id = s.id
			CROSS JOIN messages m ON m.sid = ss.sid AND m.seq >= `+bound+`
			ORDER BY s.i, m.seq`, tailArgs(start, part)...)
		if err != nil {
			return nil, fmt.Errorf("session tail messages: %w", err)
		}
		for rows.Next() {
			var i int
			var from int64
			var m Message
			var ts sql.NullInt64
			if err := rows.Scan(&i, &from, &m.Seq, &m.ID, &m.Role, &m.Speaker, &m.Text, &ts); err != nil {
				rows.Close()
				return nil, fmt.Errorf("session tail messages: %w", err)
			}
			ref := reqs[i].Session
			m.Namespace, m.SessionKey, m.SessionID, m.Time = ref.Namespace, ref.SessionKey, ref.SessionID, timeOf(ts)
			if m.Seq < from {
				out[i].Before = append(out[i].Before, m)
			} else {
				out[i].From = append(out[i].From, m)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("session tail messages: %w", err)
		}
	}
	return out, tx.Commit()
}

// tailValues starts a statement with the CTE s(i, ns, k, id, seq) of n
// rows of parameters (k the session key, id the session id); a statement
// joins it to sessions for each session's sid.
func tailValues(n int) string {
	var b strings.Builder
	b.WriteString(`WITH s(i, ns, k, id, seq) AS (VALUES `)
	for j := range n {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
	}
	b.WriteString(")")
	return b.String()
}

// tailArgs are the parameters of tailValues for reqs, numbered from start.
func tailArgs(start int, reqs []TailRequest) []any {
	args := make([]any, 0, 5*len(reqs))
	for j, r := range reqs {
		args = append(args, start+j, r.Session.Namespace, r.Session.SessionKey, r.Session.SessionID, r.Seq)
	}
	return args
}
