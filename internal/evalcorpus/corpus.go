package evalcorpus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Event is one message line, with LoCoMo's JSON field names.
type Event struct {
	// SessionKey names the conversation ("gen-01"); searches are scoped to it.
	SessionKey string `json:"sessionKey"`
	// SessionID names the session within the conversation ("session_3").
	SessionID string `json:"sessionId"`
	// Seq is the 1-based position within the session.
	Seq int `json:"seq"`
	// ConvSeq is the 1-based position within the conversation.
	ConvSeq int `json:"convSeq"`
	// MessageID is "D<session>:<seq>", unique within a SessionKey.
	MessageID string `json:"messageId"`
	// EventID is "<SessionKey>/<MessageID>", unique in the corpus.
	EventID string `json:"eventId"`
	// Role is "user" for the conversation's first person, "assistant" for
	// the others.
	Role string `json:"role"`
	// Speaker is the speaker's name.
	Speaker string `json:"speaker"`
	// Text is the message.
	Text string `json:"text"`
	// Timestamp is the session's start time in RFC 3339, UTC.
	Timestamp string `json:"timestamp"`
}

// Query is one question line, with LoCoMo's JSON field names.
type Query struct {
	// QueryID is "<SessionKey>/q0001" and so on.
	QueryID string `json:"queryId"`
	// SessionKey is the conversation to search.
	SessionKey string `json:"sessionKey"`
	// Question is the question, naming the person it is about.
	Question string `json:"question"`
	// Answer is the expected answer; for temporal questions a date or a
	// span relative to a session date, as in LoCoMo.
	Answer string `json:"answer"`
	// Category is LoCoMo's category number: 1 multi-hop, 2 temporal,
	// 4 single-hop.
	Category int `json:"category"`
	// CategoryName is "multi-hop", "temporal" or "single-hop".
	CategoryName string `json:"categoryName"`
	// GoldMessageIDs are the evidence messages, in conversation order.
	GoldMessageIDs []string `json:"goldMessageIds"`
	// GoldSessionIDs are the sessions of the evidence messages.
	GoldSessionIDs []string `json:"goldSessionIds"`
}

// LoCoMo's category numbers and names; open-domain (3) and adversarial (5)
// are not generated.
const (
	CategoryMultiHop  = 1
	CategoryTemporal  = 2
	CategorySingleHop = 4
)

// CategoryName returns LoCoMo's name of category c, or "" for one not
// generated here.
func CategoryName(c int) string {
	switch c {
	case CategoryMultiHop:
		return "multi-hop"
	case CategoryTemporal:
		return "temporal"
	case CategorySingleHop:
		return "single-hop"
	}
	return ""
}

// Corpus is a generated corpus: messages in conversation order and the
// questions about them.
type Corpus struct {
	// Name is "synthetic-en" or "synthetic-zh", the files' base name.
	Name    string
	Events  []Event
	Queries []Query
}

// WriteDir writes the corpus as <Name>.events.jsonl and
// <Name>.queries.jsonl into dir (created if missing), one JSON object per
// line.
func (c Corpus) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write corpus: %w", err)
	}
	if err := writeLines(filepath.Join(dir, c.Name+".events.jsonl"), c.Events); err != nil {
		return fmt.Errorf("write corpus events: %w", err)
	}
	if err := writeLines(filepath.Join(dir, c.Name+".queries.jsonl"), c.Queries); err != nil {
		return fmt.Errorf("write corpus queries: %w", err)
	}
	return nil
}

func writeLines[T any](path string, items []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range items {
		if err := enc.Encode(&items[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
