package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"memindex"
	"memindex/chunker"
	"memindex/embedder"
	"memindex/store"
)

// StageFigure is one ingest stage timed on its own over the whole generated
// corpus: In items in, Out items out.
type StageFigure struct {
	Stage   string  `json:"stage"`
	In      int     `json:"in"`
	Out     int     `json:"out"`
	Seconds float64 `json:"seconds"`
	// MessagesPerSecond is the corpus's messages over this stage's time, so
	// stages compare on one scale.
	MessagesPerSecond float64 `json:"messagesPerSecond"`
}

// benchSessionChunks is one session's messages and chunks on their way
// through the stages.
type benchSessionChunks struct {
	ref    store.SessionRef
	msgs   []store.Message
	chunks []chunker.Chunk
	vecs   [][]float32
}

// runStages runs the ingest stages one after the other over the same
// generated events, each on one goroutine and timed on its own: decode
// (memindex.DecodeEvent: JSON and validation), chunk (the session windows
// of the bench node: one chunk a message of up to 400 tokens, 2 context messages), embed
// (the built-in embedder, 384 dims, batches of 64) and commit (store.Apply
// into a new shard in dir, batches of 1,000 messages with their chunks and
// vectors, as the worker commits them). NATS is not part of any stage.
func runStages(ctx context.Context, dir string, messages int, say func(string, ...any)) ([]StageFigure, error) {
	lines := GeneratedEvents(messages)
	var out []StageFigure
	stage := func(name string, in, outN int, t time.Time) {
		el := time.Since(t).Seconds()
		f := StageFigure{Stage: name, In: in, Out: outN, Seconds: el, MessagesPerSecond: float64(len(lines)) / el}
		out = append(out, f)
		say("  %-7s %8d in  %8d out  %7.2fs  %9.0f messages/s", name, in, outN, el, f.MessagesPerSecond)
	}

	t := time.Now()
	events := make([]memindex.Event, len(lines))
	for i, l := range lines {
		e, err := memindex.DecodeEvent(l)
		if err != nil {
			return nil, fmt.Errorf("decode event %d: %w", i, err)
		}
		events[i] = e
	}
	stage("decode", len(lines), len(events), t)

	t = time.Now()
	var sessions []*benchSessionChunks
	byRef := map[store.SessionRef]*benchSessionChunks{}
	for _, e := range events {
		ref := store.SessionRef{Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID}
		s := byRef[ref]
		if s == nil {
			s = &benchSessionChunks{ref: ref}
			byRef[ref] = s
			sessions = append(sessions, s)
		}
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil {
			return nil, fmt.Errorf("timestamp of %s: %w", e.ID, err)
		}
		s.msgs = append(s.msgs, store.Message{Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID,
			Seq: e.Seq, ID: e.ID, Role: e.Role, Speaker: e.Speaker, Text: e.Text, Time: ts})
	}
	cc := chunker.Config{BudgetTokens: 400}
	chunks := 0
	for _, s := range sessions {
		cm := make([]chunker.Message, len(s.msgs))
		for i, m := range s.msgs {
			cm[i] = chunker.Message{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text, Time: m.Time}
		}
		s.chunks = chunker.Session(cc, s.ref.Namespace+"\x00"+s.ref.SessionKey+"\x00"+s.ref.SessionID, cm)
		chunks += len(s.chunks)
	}
	stage("chunk", len(events), chunks, t)

	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: vecDims})
	if err != nil {
		return nil, err
	}
	t = time.Now()
	const embedBatch = 64
	var texts []string
	var owners []*benchSessionChunks
	flush := func() error {
		if len(texts) == 0 {
			return nil
		}
		vs, err := emb.Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
		if err != nil {
			return err
		}
		for i, v := range vs {
			owners[i].vecs = append(owners[i].vecs, v)
		}
		texts, owners = texts[:0], owners[:0]
		return nil
	}
	for _, s := range sessions {
		for _, c := range s.chunks {
			texts = append(texts, chunker.EmbedText(c.Context, c.Text))
			owners = append(owners, s)
			if len(texts) == embedBatch {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	stage("embed", chunks, chunks, t)

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "stages.db")
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(path + s)
	}
	sh, err := store.Open(ctx, path, store.Config{Dims: vecDims})
	if err != nil {
		return nil, err
	}
	defer sh.Close(ctx)
	t = time.Now()
	var b store.Batch
	seq := uint64(0)
	commit := func() error {
		if len(b.Messages) == 0 {
			return nil
		}
		b.Seq = seq
		_, err := sh.Apply(ctx, b)
		b = store.Batch{}
		return err
	}
	for _, s := range sessions {
		sc := store.SessionChunks{Session: s.ref}
		for i, c := range s.chunks {
			sc.Chunks = append(sc.Chunks, store.Chunk{ID: c.ID, Namespace: s.ref.Namespace, Source: memindex.SourceSessions,
				SessionKey: s.ref.SessionKey, SessionID: s.ref.SessionID, SeqStart: c.SeqStart, SeqEnd: c.SeqEnd, Part: c.Part,
				Text: c.Text, Context: c.Context, TimeStart: c.TimeStart, TimeEnd: c.TimeEnd, Vector: s.vecs[i]})
		}
		b.Messages = append(b.Messages, s.msgs...)
		b.Rechunk = append(b.Rechunk, sc)
		seq += uint64(len(s.msgs))
		if len(b.Messages) >= 1000 {
			if err := commit(); err != nil {
				return nil, err
			}
		}
	}
	if err := commit(); err != nil {
		return nil, err
	}
	stage("commit", len(events), chunks, t)
	var sum float64
	for _, f := range out {
		sum += f.Seconds
	}
	out = append(out, StageFigure{Stage: "sum", In: len(lines), Out: chunks, Seconds: sum, MessagesPerSecond: float64(len(lines)) / sum})
	return out, nil
}
