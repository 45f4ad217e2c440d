package eval

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"

	_ "github.com/mattn/go-sqlite3" // the baseline's FTS5 (build tag sqlite_fts5)

	"memindex"
)

// BaselineSystem is the baseline's name in reports.
const BaselineSystem = "plain BM25 / message"

// Baseline is the plain keyword baseline every system is shown beside:
// SQLite FTS5 BM25 over single messages, one row per message with the text
// "Speaker: text" (no image caption), tokenizer
// `porter unicode61 remove_diacritics 2`, searched with every distinct
// lowercase word of the question, each double-quoted, joined with OR,
// within the question's conversation, best bm25 first.
//
// CJK: unicode61 keeps a run of Han, Kana or Hangul as one token, so a
// Chinese question would match nothing. The baseline therefore writes each
// such run, in the messages and in the questions alike, as its overlapping
// character bigrams (a single character stays itself), the classic
// CJKAnalyzer approach with no dictionary. Text without CJK characters is
// indexed and searched exactly as described above; the rule is the same
// for every corpus.
type Baseline struct {
	db *sql.DB
}

// OpenBaseline creates the baseline's SQLite file at path (which must not
// exist) and indexes msgs.
func OpenBaseline(ctx context.Context, path string, msgs []Message) (_ *Baseline, err error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=OFF&_synchronous=OFF")
	if err != nil {
		return nil, fmt.Errorf("open baseline: %w", err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE msg USING fts5(body, session_key UNINDEXED, session_id UNINDEXED, seq UNINDEXED, message_id UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')`); err != nil {
		return nil, fmt.Errorf("create baseline index (FTS5 needs the sqlite_fts5 build tag): %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("index baseline: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO msg(body, session_key, session_id, seq, message_id) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("index baseline: %w", err)
	}
	defer st.Close()
	for _, m := range msgs {
		body := m.Text
		if m.Speaker != "" {
			body = m.Speaker + ": " + m.Text
		}
		if _, err := st.ExecContext(ctx, BaselineText(body), m.SessionKey, m.SessionID, m.Seq, m.ID); err != nil {
			return nil, fmt.Errorf("index baseline: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("index baseline: %w", err)
	}
	return &Baseline{db: db}, nil
}

// Search returns the baseline's top k messages for question within
// sessionKey, each as a hit of one message.
func (b *Baseline) Search(ctx context.Context, sessionKey, question string, k int) ([]memindex.Hit, error) {
	match := MatchQuery(Words(question))
	if match == "" {
		return nil, nil
	}
	rows, err := b.db.QueryContext(ctx, `SELECT message_id, session_id, seq, body, bm25(msg) FROM msg WHERE msg MATCH ? AND session_key = ? ORDER BY bm25(msg), rowid LIMIT ?`, match, sessionKey, k)
	if err != nil {
		return nil, fmt.Errorf("baseline search: %w", err)
	}
	defer rows.Close()
	var hits []memindex.Hit
	for rows.Next() {
		var h memindex.Hit
		var id string
		var score float64
		if err := rows.Scan(&id, &h.SessionID, &h.SeqStart, &h.Text, &score); err != nil {
			return nil, fmt.Errorf("baseline search: %w", err)
		}
		h.ID, h.Source, h.SessionKey, h.SeqEnd, h.MessageIDs, h.Score = id, memindex.SourceSessions, sessionKey, h.SeqStart, []string{id}, -score
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("baseline search: %w", err)
	}
	return hits, nil
}

// Close closes the baseline's file.
func (b *Baseline) Close() error { return b.db.Close() }

// Words returns the distinct lowercase word tokens of s in order of first
// appearance: runs of Unicode letters, digits and marks, with every run of
// CJK characters written as its overlapping bigrams (see Baseline).
func Words(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range strings.FieldsFunc(BaselineText(s), func(r rune) bool { return !isWordRune(r) }) {
		if t = strings.ToLower(t); !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// MatchQuery returns the FTS5 query of words: each double-quoted (a quote
// inside doubled), joined with OR.
func MatchQuery(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(q, " OR ")
}

// BaselineText returns s with every run of CJK characters replaced by its
// overlapping character bigrams, space separated and set apart by spaces;
// other text is returned unchanged.
func BaselineText(s string) string {
	if !strings.ContainsFunc(s, isCJK) {
		return s
	}
	var b strings.Builder
	var run []rune
	flush := func() {
		if len(run) == 0 {
			return
		}
		b.WriteByte(' ')
		if len(run) == 1 {
			b.WriteString(string(run))
		}
		for i := 0; i+1 < len(run); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(string(run[i : i+2]))
		}
		b.WriteByte(' ')
		run = run[:0]
	}
	for _, r := range s {
		if isCJK(r) {
			run = append(run, r)
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String()
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}
