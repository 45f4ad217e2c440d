package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// speakerBoost multiplies the BM25 score of a session chunk whose speaker
// the query names: questions about a person are mostly answered by that
// person's own messages, but a speaker's name is on half the lines of a
// two-person chat, so BM25 gives it almost no weight. Chosen on one half of
// LoCoMo's conversations (0.1, 0.2 and 0.4 tried; 0.2 best) and kept
// because it also wins on the other half and on the generated corpus
// (BENCHMARKS.md).
const speakerBoost = 1.2

// speakerSet remembers the speakers of each namespace of a shard, to find
// those a query names. Speakers are added as messages commit
// and never removed (a speaker whose messages were deleted costs a LIKE).
type speakerSet struct {
	mu sync.RWMutex
	// first maps a namespace to the first word of each speaker name to the
	// names; cjk maps a namespace to names with CJK characters (matched as
	// substrings: such queries have no spaces).
	first map[string]map[string][]string
	cjk   map[string]map[string]bool
}

func newSpeakerSet() *speakerSet {
	return &speakerSet{first: map[string]map[string][]string{}, cjk: map[string]map[string]bool{}}
}

func (z *speakerSet) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT namespace, speaker FROM messages WHERE speaker != ''`)
	if err != nil {
		return err
	}
	defer rows.Close()
	z.mu.Lock()
	defer z.mu.Unlock()
	for rows.Next() {
		var ns, sp string
		if err := rows.Scan(&ns, &sp); err != nil {
			return err
		}
		z.addLocked(ns, sp)
	}
	return rows.Err()
}

// add records the speakers of msgs.
func (z *speakerSet) add(msgs []Message) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for i := range msgs {
		if msgs[i].Speaker != "" {
			z.addLocked(msgs[i].Namespace, msgs[i].Speaker)
		}
	}
}

func (z *speakerSet) addLocked(ns, speaker string) {
	name := strings.TrimSpace(strings.ToValidUTF8(speaker, "\uFFFD"))
	if name == "" {
		return
	}
	if hasCJK(name) {
		if z.cjk[ns] == nil {
			z.cjk[ns] = map[string]bool{}
		}
		z.cjk[ns][name] = true
		return
	}
	w := strings.ToLower(strings.Fields(name)[0])
	m := z.first[ns]
	if m == nil {
		m = map[string][]string{}
		z.first[ns] = m
	}
	for _, n := range m[w] {
		if n == name {
			return
		}
	}
	m[w] = append(m[w], name)
}

// named returns the speakers of ns (as stored) that the query names: a
// name whose first word is a query term (terms are lower case), a CJK name
// found in the query text. At most 8, so a query never grows a long condition.
func (z *speakerSet) named(ns, query string, terms []string) []string {
	z.mu.RLock()
	defer z.mu.RUnlock()
	var out []string
	if m := z.first[ns]; m != nil {
		for _, t := range terms {
			out = append(out, m[t]...)
		}
	}
	if c := z.cjk[ns]; len(c) > 0 && hasCJK(query) {
		for name := range c {
			if utf8.RuneCountInString(name) >= 2 && strings.Contains(query, name) {
				out = append(out, name)
			}
		}
	}
	return out[:min(len(out), 8)]
}

// speakerCase returns the SQL factor (and its arguments) that boosts the
// chunks whose text starts with one of names as its speaker prefix, or ""
// when names is empty.
func speakerCase(names []string) (string, []any) {
	if len(names) == 0 {
		return "", nil
	}
	var b strings.Builder
	args := make([]any, 0, len(names))
	b.WriteString(`(CASE WHEN c.source = 'sessions' AND (`)
	for i, n := range names {
		if i > 0 {
			b.WriteString(` OR `)
		}
		b.WriteString(`c.text LIKE ? ESCAPE '\'`)
		args = append(args, likeEscape(n)+": %")
	}
	b.WriteString(`) THEN ` + strconv.FormatFloat(speakerBoost, 'g', -1, 64) + ` ELSE 1.0 END)`)
	return b.String(), args
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
