package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
	"memindex/client"
)

// AddInput is the arguments of memory_add: a memory record.
type AddInput struct {
	Text       string   `json:"text" jsonschema:"the fact to keep, as a sentence that makes sense later without this conversation, e.g. 'Ana prefers tea to coffee'"`
	Namespace  string   `json:"namespace,omitempty" jsonschema:"the memory namespace to use; leave it out for the server's own (other namespaces only when the server allows them)"`
	SessionKey string   `json:"sessionKey,omitempty" jsonschema:"keep the fact for this conversation channel only (its scope); leave it out for a fact that holds everywhere"`
	SessionID  string   `json:"sessionId,omitempty" jsonschema:"narrow the scope to this session of the channel (with sessionKey)"`
	Tags       []string `json:"tags,omitempty" jsonschema:"labels that help find the fact later, e.g. preferences or project-x (at most 20, each at most 64 bytes)"`
	ID         string   `json:"id,omitempty" jsonschema:"the recordId of a kept fact to replace with this text; leave it out to add one (the same text in the same scope is kept once)"`
}

// AddOutput is the result of memory_add.
type AddOutput struct {
	Namespace string `json:"namespace"`
	// RecordID is the id the record is stored under: the one published, or
	// the near-duplicate it updated (Merged).
	RecordID string `json:"recordId" jsonschema:"the id of the record holding the text: give it to memory_forget to remove the fact"`
	Merged   bool   `json:"merged" jsonschema:"a record of the same scope said nearly the same, so it was updated with this text instead of keeping both"`
	Seq      uint64 `json:"seq" jsonschema:"the event's sequence in the memindex stream"`
	Applied  bool   `json:"applied" jsonschema:"the workers applied the event and a search for its text shows the record: memory_search finds it now"`
	Note     string `json:"note,omitempty" jsonschema:"what else to know, e.g. that the workers had not applied it yet"`
}

// RecordID is the id memory_add gives a record it is not told one for:
// "mcp-" and the first 16 bytes, in hex, of the sha256 of the scope
// (sessionKey, sessionId) and the trimmed text. So the same fact added
// twice in one scope is one record, and the same words in two scopes are
// two.
func RecordID(sessionKey, sessionID, text string) string {
	sum := sha256.Sum256([]byte("memindex/mcp/record/v1\x00" + sessionKey + "\x00" + sessionID + "\x00" + strings.TrimSpace(text)))
	return "mcp-" + hex.EncodeToString(sum[:16])
}

func (s *Server) addAdd() {
	addTool(s, &mcp.Tool{
		Name:  "memory_add",
		Title: "Keep a fact in memory",
		Description: "Keep a fact in long-term memory as a record, for memory_search to find later (as source records). " +
			"Give it a scope (sessionKey, sessionId) when it holds for one conversation only. " +
			"A record that says nearly the same in the same scope is updated instead of kept twice; the result's recordId names the record that holds the text. " +
			"The call waits a few seconds for the workers to apply it, and says in applied whether they did.",
		InputSchema: inputSchema[AddInput](nil),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.add)
}

// add publishes a record.upserted event and waits for it (awaitApplied).
// Its timestamp is the time of the call: the record's update time, and
// what makes each call's event unique, so a fact forgotten and added again
// within the stream's duplicate window is not dropped as a duplicate.
func (s *Server) add(ctx context.Context, in AddInput) (string, AddOutput, error) {
	ns, err := s.namespace(in.Namespace)
	if err != nil {
		return "", AddOutput{}, err
	}
	if in.SessionID != "" && in.SessionKey == "" {
		return "", AddOutput{}, &memindex.FieldError{Field: "sessionId", Reason: "needs sessionKey: a scope is a channel, or a session of a channel", Err: memindex.ErrInvalid}
	}
	if err := checkTags(in.Tags); err != nil {
		return "", AddOutput{}, err
	}
	text := strings.TrimSpace(in.Text)
	id := in.ID
	if id == "" {
		id = RecordID(in.SessionKey, in.SessionID, text)
	}
	ev := memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: ns, ID: id, Text: text, Tags: in.Tags,
		SessionKey: in.SessionKey, SessionID: in.SessionID, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	seq, applied, note, err := s.publish(ctx, ev)
	if err != nil {
		return "", AddOutput{}, err
	}
	out := AddOutput{Namespace: ns, RecordID: id, Seq: seq, Applied: applied, Note: note}
	if applied {
		// A failed search (over the namespace's rate, say) tells nothing:
		// applied stands and the id is the one published.
		switch stored, err := s.storedRecord(ctx, ev); {
		case err != nil:
		case stored == "":
			// The workers moved past the event, yet it is not there: a
			// worker with tighter limits dead-lettered it, or it is
			// ranked below 20 records of the same words.
			out.Applied = false
			out.Note = fmt.Sprintf("The workers moved past it (stream seq %d), but a search for its text does not show it: a worker may have refused it (`memindex dlq list` says why).", seq)
		case stored != id:
			out.RecordID, out.Merged = stored, true
		}
	}
	var b strings.Builder
	switch {
	case out.Merged:
		fmt.Fprintf(&b, "Kept in namespace %s by updating record %s, which said nearly the same (record %s was not added).", ns, out.RecordID, id)
	default:
		fmt.Fprintf(&b, "Kept in namespace %s as record %s.", ns, out.RecordID)
	}
	if out.Applied {
		b.WriteString(" memory_search finds it now.")
	} else {
		b.WriteString(" " + out.Note)
	}
	return b.String(), out, nil
}

// Tag limits of memory_add: tags are indexed with the record's text.
const (
	maxTags     = 20
	maxTagBytes = 64
)

// checkTags refuses tags a record should not carry, naming the first.
func checkTags(tags []string) error {
	if len(tags) > maxTags {
		return &memindex.FieldError{Field: "tags", Reason: fmt.Sprintf("has %d tags, at most %d", len(tags), maxTags), Err: memindex.ErrInvalid}
	}
	for _, tag := range tags {
		switch {
		case strings.TrimSpace(tag) == "":
			return &memindex.FieldError{Field: "tags", Reason: "holds a blank tag", Err: memindex.ErrInvalid}
		case len(tag) > maxTagBytes:
			return &memindex.FieldError{Field: "tags", Reason: fmt.Sprintf("tag %.20q… is %d bytes, at most %d", tag, len(tag), maxTagBytes), Err: memindex.ErrInvalid}
		case strings.ContainsFunc(tag, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return &memindex.FieldError{Field: "tags", Reason: fmt.Sprintf("tag %q contains a control character", tag), Err: memindex.ErrInvalid}
		}
	}
	return nil
}

// storedRecord returns the id of the record of ev's scope that holds ev's
// text once the workers applied ev: ev.ID, or the near-duplicate it was
// merged into; "" when a search does not show it.
func (s *Server) storedRecord(ctx context.Context, ev memindex.Event) (string, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return "", err
	}
	defer cancel()
	q := ev.Text
	if len(q) > 1024 {
		n := 1024
		for n > 0 && !utf8.RuneStart(q[n]) {
			n--
		}
		q = q[:n]
	}
	resp, err := s.c.Search(ctx, memindex.SearchRequest{Namespace: ev.Namespace, Query: q, K: 20, Sources: []string{memindex.SourceRecords}})
	if err != nil {
		return "", err
	}
	for _, h := range resp.Hits {
		if h.Source == memindex.SourceRecords && h.SessionKey == ev.SessionKey && h.SessionID == ev.SessionID && strings.HasPrefix(h.Text, ev.Text) {
			return h.RecordID, nil
		}
	}
	return "", nil
}

// awaitApplied waits until the workers applied the stream up to seq or ctx
// ends: polling their statuses quickly for quickSyncFor, then patiently
// (Config.StatusWait a poll) for workers too busy to answer quickly.
func (s *Server) awaitApplied(ctx context.Context, seq uint64) error {
	req := client.SyncRequest{Seq: seq}
	qctx, cancel := context.WithTimeout(ctx, quickSyncFor)
	err := s.quickSync.Sync(qctx, req)
	cancel()
	if err == nil || ctx.Err() != nil || qctx.Err() == nil || s.cfg.StatusWait <= applyPollWait {
		return err // done, out of time, or failed at once (no worker, NATS down)
	}
	return s.sync.Sync(ctx, req)
}

// publish publishes ev and waits until the workers applied it, at most
// Config.ApplyWait. It returns the event's stream sequence, whether it was
// seen applied, and, when not, why in words; an error only when ev was not
// published.
func (s *Server) publish(ctx context.Context, ev memindex.Event) (seq uint64, applied bool, note string, err error) {
	pctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, false, "", err
	}
	ack, err := s.c.Publish(pctx, ev)
	cancel()
	if err != nil {
		return 0, false, "", err
	}
	if s.cfg.ApplyWait < 0 {
		return ack.Seq, false, "Published; the workers apply it shortly (this server does not wait for them).", nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.ApplyWait)
	defer cancel()
	if err := s.awaitApplied(wctx, ack.Seq); err != nil {
		return ack.Seq, false, fmt.Sprintf("Published (stream seq %d), but the workers had not applied it within %s, so a memory_search may not see it yet: %v", ack.Seq, s.cfg.ApplyWait, err), nil
	}
	return ack.Seq, true, "", nil
}
