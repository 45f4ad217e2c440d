package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Message is one message event of a corpus: what the baseline indexes, and
// what turns a hit's sequence range into message ids.
type Message struct {
	SessionKey string
	SessionID  string
	Seq        int64
	// ID is the event's messageId (or its id when it has no messageId);
	// gold ids name messages by it, within their SessionKey.
	ID      string
	Speaker string
	Text    string
}

// Question is one line of a queries file.
type Question struct {
	ID           string   `json:"queryId"`
	SessionKey   string   `json:"sessionKey"`
	Text         string   `json:"question"`
	Category     int      `json:"category"`
	CategoryName string   `json:"categoryName"`
	Gold         []string `json:"goldMessageIds"`
}

// Corpus is an evaluation corpus as Load read it.
type Corpus struct {
	// Name is the events file's name without ".events.jsonl".
	Name string
	Dir  string
	// Events are the events file's non-blank lines as read, to publish.
	Events [][]byte
	// Messages are the events of type message (or of no type), in file order.
	Messages []Message
	// Questions are the questions with gold ids, in file order.
	Questions []Question
	// Skipped counts the questions without gold ids.
	Skipped int

	at map[seqKey]string
}

type seqKey struct {
	sessionKey, sessionID string
	seq                   int64
}

// Load reads the corpus in dir: exactly one *.events.jsonl and one
// *.queries.jsonl. A line that is not a JSON object, a message without
// sessionKey or id, or a question without sessionKey or text is an error
// wrapping ErrBadLine that names the file and the line.
func Load(dir string) (Corpus, error) {
	evPath, err := onlyFile(dir, "*.events.jsonl")
	if err != nil {
		return Corpus{}, err
	}
	qPath, err := onlyFile(dir, "*.queries.jsonl")
	if err != nil {
		return Corpus{}, err
	}
	c := Corpus{Name: strings.TrimSuffix(filepath.Base(evPath), ".events.jsonl"), Dir: dir, at: map[seqKey]string{}}
	err = eachLine(evPath, func(line []byte) error {
		var ev struct {
			Type       string `json:"type"`
			SessionKey string `json:"sessionKey"`
			SessionID  string `json:"sessionId"`
			Seq        int64  `json:"seq"`
			ID         string `json:"id"`
			MessageID  string `json:"messageId"`
			Speaker    string `json:"speaker"`
			Text       string `json:"text"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		c.Events = append(c.Events, line)
		if ev.Type != "" && ev.Type != "message" {
			return nil // files and records are published, not baseline messages
		}
		id := ev.MessageID
		if id == "" {
			id = ev.ID
		}
		if ev.SessionKey == "" || id == "" {
			return fmt.Errorf("a message needs sessionKey and messageId (or id)")
		}
		c.Messages = append(c.Messages, Message{SessionKey: ev.SessionKey, SessionID: ev.SessionID, Seq: ev.Seq, ID: id, Speaker: ev.Speaker, Text: ev.Text})
		c.at[seqKey{ev.SessionKey, ev.SessionID, ev.Seq}] = id
		return nil
	})
	if err != nil {
		return Corpus{}, err
	}
	err = eachLine(qPath, func(line []byte) error {
		var q Question
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if q.SessionKey == "" || strings.TrimSpace(q.Text) == "" {
			return fmt.Errorf("a question needs sessionKey and question")
		}
		if q.Gold = distinct(q.Gold); len(q.Gold) == 0 {
			c.Skipped++
			return nil
		}
		c.Questions = append(c.Questions, q)
		return nil
	})
	if err != nil {
		return Corpus{}, err
	}
	return c, nil
}

// MessageAt returns the id of the message at seq of a session, or "" when
// the corpus has none there.
func (c Corpus) MessageAt(sessionKey, sessionID string, seq int64) string {
	return c.at[seqKey{sessionKey, sessionID, seq}]
}

// SessionKeys returns the corpus's conversations, sorted.
func (c Corpus) SessionKeys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range c.Messages {
		if !seen[m.SessionKey] {
			seen[m.SessionKey] = true
			keys = append(keys, m.SessionKey)
		}
	}
	for _, q := range c.Questions {
		if !seen[q.SessionKey] {
			seen[q.SessionKey] = true
			keys = append(keys, q.SessionKey)
		}
	}
	sort.Strings(keys)
	return keys
}

func onlyFile(dir, pattern string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return "", err
	}
	if len(m) != 1 {
		return "", fmt.Errorf("%w: %s holds %d files %s, want exactly one", ErrCorpusFiles, dir, len(m), pattern)
	}
	return m[0], nil
}

// eachLine calls fn with every non-blank line of path; an error of fn is
// returned as path:line wrapping ErrBadLine.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open corpus: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s:%d: %w", path, n, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if ferr := fn(append([]byte(nil), t...)); ferr != nil {
				return fmt.Errorf("%s:%d: %w: %v", path, n, ErrBadLine, ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func distinct(ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
