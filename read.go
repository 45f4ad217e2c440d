package memindex

// ReadSubjectPrefix is the prefix of the read endpoint, followed by the
// namespace: memindex.read.<namespace>.
const ReadSubjectPrefix = "memindex.read"

// Read limits.
const (
	DefaultReadCount = 20
	MaxReadCount     = 500
)

// ReadSubject returns the read endpoint subject of namespace ns.
func ReadSubject(ns string) string { return ReadSubjectPrefix + "." + ns }

// ReadRequest asks for a session's messages from seq From on, at most Count
// of them (like an agent's memory_get on a conversation). Namespace may come
// from the subject.
//
// With Path set it reads a memory file instead: Count lines from line From.
type ReadRequest struct {
	Type       string `json:"type,omitempty"` // "read"; optional
	Namespace  string `json:"namespace,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	Path       string `json:"path,omitempty"`
	From       int64  `json:"from,omitempty"`
	Count      int    `json:"count,omitempty"`
}

// Normalize fills defaults (from 1, count 20) and validates the request; the
// error is a *FieldError naming the field.
func (r *ReadRequest) Normalize() error {
	if err := CheckNamespace(r.Namespace); err != nil {
		return err
	}
	if r.Path != "" {
		if err := checkKey("path", r.Path, true); err != nil {
			return err
		}
	} else {
		if err := checkKey("sessionKey", r.SessionKey, true); err != nil {
			return err
		}
		if err := checkKey("sessionId", r.SessionID, true); err != nil {
			return err
		}
	}
	switch {
	case r.From == 0:
		r.From = 1
	case r.From < 0:
		return fieldErr("from", "must be a positive seq, got %d", r.From)
	}
	switch {
	case r.Count == 0:
		r.Count = DefaultReadCount
	case r.Count < 0 || r.Count > MaxReadCount:
		return fieldErr("count", "must be between 1 and %d, got %d", MaxReadCount, r.Count)
	}
	return nil
}

// ReadResponse answers a ReadRequest with the messages in seq order.
type ReadResponse struct {
	Type       string        `json:"type"` // "read.result"
	Version    int           `json:"version"`
	Namespace  string        `json:"namespace"`
	SessionKey string        `json:"sessionKey"`
	SessionID  string        `json:"sessionId"`
	Messages   []ReadMessage `json:"messages"`
	// Path and Lines answer a file read: the lines from From on.
	Path  string   `json:"path,omitempty"`
	Lines []string `json:"lines,omitempty"`
	// More is set when messages after the last returned one exist.
	More bool `json:"more"`
}

// ReadMessage is one stored message.
type ReadMessage struct {
	Seq       int64  `json:"seq"`
	ID        string `json:"id,omitempty"`
	Role      string `json:"role,omitempty"`
	Speaker   string `json:"speaker,omitempty"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp,omitempty"`
}
