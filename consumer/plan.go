package consumer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"memindex"
	"memindex/chunker"
	"memindex/store"
)

// sessionPlan collects what one batch does to one session.
type sessionPlan struct {
	ref   store.SessionRef
	reset bool // the session was deleted in this batch before these messages
	msgs  map[int64]store.Message
}

// planner coalesces the valid events of one batch, in stream order, into a
// store.Batch: deletions first, then each touched session's new messages and
// the re-chunking of its tail.
type planner struct {
	sessions map[store.SessionRef]*sessionPlan
	order    []store.SessionRef
	deletes  []store.SessionRef
	// files holds the last event of each memory file in the batch.
	files     map[store.FileRef]memindex.Event
	fileOrder []store.FileRef
	// records holds the last event of each memory record (Path = its id).
	records     map[store.FileRef]memindex.Event
	recordOrder []store.FileRef
}

func newPlanner() *planner {
	return &planner{sessions: make(map[store.SessionRef]*sessionPlan), files: make(map[store.FileRef]memindex.Event),
		records: make(map[store.FileRef]memindex.Event)}
}

func (p *planner) add(e memindex.Event) {
	switch e.Type {
	case memindex.TypeMessage:
		p.addMessage(&e)
	case memindex.TypeMessages:
		for _, m := range e.Messages {
			me := e.Message(m)
			p.addMessage(&me)
		}
	case memindex.TypeFileUpserted, memindex.TypeFileDeleted:
		ref := store.FileRef{Namespace: e.Namespace, Path: e.Path}
		if _, ok := p.files[ref]; !ok {
			p.fileOrder = append(p.fileOrder, ref)
		}
		p.files[ref] = e // the last event of a file wins
	case memindex.TypeRecordUpserted, memindex.TypeRecordDeleted:
		ref := store.FileRef{Namespace: e.Namespace, Path: e.ID}
		if _, ok := p.records[ref]; !ok {
			p.recordOrder = append(p.recordOrder, ref)
		}
		p.records[ref] = e
	case memindex.TypeSessionDeleted:
		del := store.SessionRef{Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID}
		p.deletes = append(p.deletes, del)
		for ref, sp := range p.sessions {
			if ref.Namespace == del.Namespace && ref.SessionKey == del.SessionKey &&
				(del.SessionID == "" || ref.SessionID == del.SessionID) {
				sp.reset = true
				clear(sp.msgs)
			}
		}
	}
}

// addMessage adds message event e to its session's plan.
func (p *planner) addMessage(e *memindex.Event) {
	ref := store.SessionRef{Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID}
	sp := p.sessions[ref]
	if sp == nil {
		// A deletion earlier in this batch empties the stored session
		// before these messages apply, even if it came first.
		sp = &sessionPlan{ref: ref, msgs: make(map[int64]store.Message), reset: p.deletedEarlier(ref)}
		p.sessions[ref] = sp
		p.order = append(p.order, ref)
	}
	text := e.Text
	if c := strings.TrimSpace(e.ImageCaption); c != "" {
		text = strings.TrimSpace(text + " [image: " + c + "]")
	}
	sp.msgs[e.Seq] = store.Message{
		Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID,
		Seq: e.Seq, ID: e.ID, Role: e.Role, Speaker: e.Speaker, Text: text, Time: e.Time(),
	}
}

// deletedEarlier reports whether a session.deleted already added covers ref.
func (p *planner) deletedEarlier(ref store.SessionRef) bool {
	for _, d := range p.deletes {
		if d.Namespace == ref.Namespace && d.SessionKey == ref.SessionKey && (d.SessionID == "" || d.SessionID == ref.SessionID) {
			return true
		}
	}
	return false
}

// build reads each touched session's stored tail from sh, re-chunks it with
// the new messages, and returns the batch with the chunks that need vectors.
// The tails of all the batch's sessions are read with a few set-based
// statements (planSessions), not statements per session.
func (p *planner) build(ctx context.Context, sh Shard, cc chunker.Config, mc chunker.MarkdownConfig, seq uint64) (store.Batch, []*store.Chunk, error) {
	b, fresh, _, err := p.buildAfter(ctx, sh, cc, mc, seq, nil)
	return b, fresh, err
}

// buildAfter is build for a batch that applies after the batch whose plan
// left prev (nil: none, the shard holds everything applied before): the
// tails of the sessions prev re-chunked are taken from prev instead of sh,
// which may not hold that batch yet (see plan_after.go). It fails with
// errNeedsCommit when a session's tail is not all in prev. It also returns
// what this batch's plan leaves for the next (nil when it cannot serve one).
func (p *planner) buildAfter(ctx context.Context, sh Shard, cc chunker.Config, mc chunker.MarkdownConfig, seq uint64, prev *afterBatch) (store.Batch, []*store.Chunk, *afterBatch, error) {
	b := store.Batch{Seq: seq, DeleteSessions: p.deletes}
	fresh, after, err := p.planSessions(ctx, sh, cc, &b, prev)
	if err != nil {
		return b, nil, nil, err
	}
	if len(p.deletes) > 0 || len(p.fileOrder) > 0 || len(p.recordOrder) > 0 {
		after = nil // what these change is read from the shard, after the commit
	}
	for _, ref := range p.fileOrder {
		e := p.files[ref]
		if e.Type == memindex.TypeFileDeleted {
			b.DeleteFiles = append(b.DeleteFiles, ref)
			continue
		}
		hash := e.ContentHash
		if hash == "" {
			sum := sha256.Sum256([]byte(e.Content))
			hash = hex.EncodeToString(sum[:])
		}
		if stored, ok, err := sh.FileHash(ctx, ref.Namespace, ref.Path); err != nil {
			return b, nil, nil, fmt.Errorf("plan file %q: %w", ref.Path, err)
		} else if ok && stored == hash {
			continue // unchanged: a no-op
		}
		fu := store.FileUpsert{Namespace: ref.Namespace, Path: ref.Path, DirPath: e.DirPath, Hash: hash, Content: e.Content}
		for _, sec := range chunker.Markdown(mc, ref.Namespace+"\x00"+ref.Path, e.Content) {
			text := sec.Text
			if sec.Heading != "" && !strings.HasPrefix(strings.TrimSpace(text), "#") {
				text = sec.Heading + "\n" + text // the heading path gives a split section its context
			}
			fu.Chunks = append(fu.Chunks, store.Chunk{ID: sec.ID, Namespace: ref.Namespace, Source: memindex.SourceFiles,
				Path: ref.Path, DirPath: e.DirPath, SeqStart: int64(sec.LineStart), SeqEnd: int64(sec.LineEnd), Text: text,
				TimeStart: e.Time(), TimeEnd: e.Time()})
		}
		for i := range fu.Chunks {
			fresh = append(fresh, &fu.Chunks[i])
		}
		b.Files = append(b.Files, fu)
	}
	for _, ref := range p.recordOrder {
		e := p.records[ref]
		if e.Type == memindex.TypeRecordDeleted {
			b.DeleteRecords = append(b.DeleteRecords, ref)
			continue
		}
		text := e.Text
		if len(e.Tags) > 0 {
			text += "\n[tags: " + strings.Join(e.Tags, ", ") + "]"
		}
		sum := sha256.Sum256([]byte("memindex/record/v1\x00" + ref.Namespace + "\x00" + ref.Path + "\x00" + text))
		b.Records = append(b.Records, store.RecordUpsert{Chunk: store.Chunk{
			ID: hex.EncodeToString(sum[:16]), Namespace: ref.Namespace, Source: memindex.SourceRecords, Path: ref.Path,
			SessionKey: e.SessionKey, SessionID: e.SessionID, Text: text, TimeStart: e.Time(), TimeEnd: e.Time(),
		}})
	}
	for i := range b.Records {
		fresh = append(fresh, &b.Records[i].Chunk)
	}
	return b, fresh, after, nil
}

// sessionWork is one session of a batch on its way through planSessions.
type sessionWork struct {
	sp    *sessionPlan
	news  []store.Message // the batch's messages of the session, by seq
	from  int64           // re-chunking starts here
	spans []store.ChunkSpan
	tail  store.SessionTail
	// merged are the session's messages from from on once the batch
	// applies: the stored ones with the new ones merged in.
	merged []store.Message
}

// planSessions adds to b the batch's messages and the re-chunked tail of
// every session they touch, and returns the chunks that need vectors. A
// session's tail is read from sh in two set-based steps for the whole
// batch: its stored chunks from the last one before its first new message
// (which decide where re-chunking starts, rechunkFrom), then its stored
// messages from there on with the ones before that give context.
func (p *planner) planSessions(ctx context.Context, sh Shard, cc chunker.Config, b *store.Batch, prev *afterBatch) ([]*store.Chunk, *afterBatch, error) {
	// A negative ContextMessages is no context (what --chunk-context 0
	// gives): no message before a chunk is read or kept.
	before := max(cc.WithDefaults().ContextMessages, 0)
	work := make([]sessionWork, 0, len(p.order))
	n := 0
	for _, sp := range p.sessions {
		n += len(sp.msgs)
	}
	b.Messages = slices.Grow(b.Messages, n) // grown by appends, a hot batch's were copied about twice over
	var reqs []store.TailRequest
	var stored []int // the work items read from sh, in reqs' order
	for _, ref := range p.order {
		sp := p.sessions[ref]
		if len(sp.msgs) == 0 {
			continue
		}
		news := make([]store.Message, 0, len(sp.msgs))
		for _, m := range sp.msgs {
			news = append(news, m)
		}
		sort.Slice(news, func(i, j int) bool { return news[i].Seq < news[j].Seq })
		b.Messages = append(b.Messages, news...)
		work = append(work, sessionWork{sp: sp, news: news, from: 1})
		if sp.reset { // a deletion in this batch emptied the stored session
			continue
		}
		if a, ok := prev.session(ref); ok {
			w := &work[len(work)-1]
			if !a.tail(w, before) {
				return nil, nil, errNeedsCommit
			}
			continue
		}
		reqs = append(reqs, store.TailRequest{Session: ref, Seq: news[0].Seq})
		stored = append(stored, len(work)-1)
	}
	if len(reqs) > 0 {
		spans, err := sh.SessionTailSpans(ctx, reqs)
		if err != nil {
			return nil, nil, fmt.Errorf("plan sessions: %w", err)
		}
		for j, i := range stored {
			w := &work[i]
			w.spans = spans[j]
			w.from = rechunkFrom(w.spans, w.news[0].Seq)
			reqs[j].Seq = w.from
		}
		tails, err := sh.SessionTailMessages(ctx, reqs, before)
		if err != nil {
			return nil, nil, fmt.Errorf("plan sessions: %w", err)
		}
		for j, i := range stored {
			work[i].tail = tails[j]
		}
	}
	var fresh []*store.Chunk
	after := &afterBatch{sessions: make(map[store.SessionRef]*sessionAfter, len(work))}
	for i := range work {
		sc, f := rechunkSession(cc, &work[i])
		b.Rechunk = append(b.Rechunk, sc)
		fresh = append(fresh, f...)
		after.sessions[sc.Session] = newSessionAfter(&work[i], sc, before)
	}
	return fresh, after, nil
}

// rechunkSession chunks w's stored tail with its new messages and returns
// the session's chunks from w.from on, with those not stored yet (which
// need vectors).
func rechunkSession(cc chunker.Config, w *sessionWork) (store.SessionChunks, []*store.Chunk) {
	ref := w.sp.ref
	msgs := mergeMessages(w.tail.From, w.news)
	w.merged = msgs
	chunks := chunker.SessionAfter(cc, chunkScope(ref), toChunkerMessages(w.tail.Before), toChunkerMessages(msgs))
	known := make(map[string]bool, len(w.spans))
	for _, s := range w.spans {
		known[s.ID] = true
	}
	sc := store.SessionChunks{Session: ref, From: w.from, Chunks: make([]store.Chunk, 0, len(chunks))}
	for _, c := range chunks {
		sc.Chunks = append(sc.Chunks, store.Chunk{
			ID: c.ID, Namespace: ref.Namespace, Source: memindex.SourceSessions,
			SessionKey: ref.SessionKey, SessionID: ref.SessionID,
			SeqStart: c.SeqStart, SeqEnd: c.SeqEnd, Part: c.Part, Text: c.Text, Context: c.Context,
			TimeStart: c.TimeStart, TimeEnd: c.TimeEnd,
		})
	}
	var fresh []*store.Chunk
	for i := range sc.Chunks {
		if !known[sc.Chunks[i].ID] {
			fresh = append(fresh, &sc.Chunks[i])
		}
	}
	return sc, fresh
}

// rechunkFrom returns the message seq re-chunking must start from when the
// messages from minNew on change. A window is decided by its messages and by
// the message after its end (which did not fit), so every window that ends
// at or after the message before minNew may change. Conservatively that is
// every chunk ending at or after q, the last chunk end before minNew; the
// earliest such chunk is unchanged in its start, so re-chunking from it is
// what chunking the whole session gives (the chunker's prefix stability).
// With no chunks, or none ending before minNew, the session is re-chunked
// from its start. For an append this is the start of the open tail chunk.
func rechunkFrom(spans []store.ChunkSpan, minNew int64) int64 {
	if len(spans) == 0 {
		return 1
	}
	var q int64
	for _, s := range spans {
		if s.SeqEnd < minNew && s.SeqEnd > q {
			q = s.SeqEnd
		}
	}
	if q == 0 {
		return min(spans[0].SeqStart, minNew)
	}
	for _, s := range spans {
		if s.SeqEnd >= q {
			return min(s.SeqStart, minNew)
		}
	}
	return min(spans[len(spans)-1].SeqStart, minNew)
}

// mergeMessages merges stored and new messages by seq; new ones win.
func mergeMessages(stored, news []store.Message) []store.Message {
	if len(stored) == 0 {
		return news
	}
	out := make([]store.Message, 0, len(stored)+len(news))
	i, j := 0, 0
	for i < len(stored) || j < len(news) {
		switch {
		case j == len(news) || (i < len(stored) && stored[i].Seq < news[j].Seq):
			out = append(out, stored[i])
			i++
		case i == len(stored) || news[j].Seq < stored[i].Seq:
			out = append(out, news[j])
			j++
		default: // same seq: the new message replaces the stored one
			out = append(out, news[j])
			i++
			j++
		}
	}
	return out
}

func toChunkerMessages(ms []store.Message) []chunker.Message {
	out := make([]chunker.Message, len(ms))
	for i, m := range ms {
		out[i] = chunker.Message{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text, Time: m.Time}
	}
	return out
}

// chunkScope is the scope chunk ids of a session derive from.
func chunkScope(ref store.SessionRef) string {
	return ref.Namespace + "\x00" + ref.SessionKey + "\x00" + ref.SessionID
}
