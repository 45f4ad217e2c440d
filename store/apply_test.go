package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestApplyReadBack(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(1, 2))
	msgs, sc := session("agent-7", "wa:+49", "s1", 4, r, testDims)
	msgs[2].ID = "" // a message without id is left out of MessageIDs
	sc.Chunks[3].Vector = nil
	sc.Chunks = append(sc.Chunks, Chunk{ID: "span-1-3", Source: "sessions", SeqStart: 1, SeqEnd: 3, Part: 1,
		Text: "span", TimeStart: msgs[1].Time, TimeEnd: msgs[3].Time})
	st := mustApply(t, s, Batch{Seq: 10, Messages: msgs, Rechunk: []SessionChunks{sc}})
	if want := (ApplyStats{Messages: 4, ChunksInserted: 5, VectorsWritten: 3}); st != want {
		t.Errorf("Apply() = %+v, want %+v", st, want)
	}

	got, err := s.SessionMessages(ctx, sc.Session, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, msgs[1:]) {
		t.Errorf("SessionMessages(from 1) =\n%+v\nwant\n%+v", got, msgs[1:])
	}
	if got, err := s.SessionMessages(ctx, sc.Session, 1, 2); err != nil || !reflect.DeepEqual(got, msgs[1:3]) {
		t.Errorf("SessionMessages(from 1, limit 2) = %+v, %v; want %+v", got, err, msgs[1:3])
	}

	spans, err := s.SessionChunkSpans(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	wantSpans := []ChunkSpan{
		{ID: sc.Chunks[0].ID, SeqStart: 0, SeqEnd: 0},
		{ID: sc.Chunks[1].ID, SeqStart: 1, SeqEnd: 1},
		{ID: "span-1-3", SeqStart: 1, SeqEnd: 3, Part: 1},
		{ID: sc.Chunks[2].ID, SeqStart: 2, SeqEnd: 2},
		{ID: sc.Chunks[3].ID, SeqStart: 3, SeqEnd: 3},
	}
	if !reflect.DeepEqual(spans, wantSpans) {
		t.Errorf("SessionChunkSpans() =\n%+v\nwant\n%+v", spans, wantSpans)
	}

	recs, err := s.ChunksByID(ctx, []string{"span-1-3", sc.Chunks[0].ID, "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := ChunkRecord{ID: "span-1-3", Namespace: "agent-7", Source: "sessions", SessionKey: "wa:+49", SessionID: "s1",
		SeqStart: 1, SeqEnd: 3, Part: 1, MessageIDs: []string{msgs[1].ID, msgs[3].ID}, Text: "span",
		TimeStart: msgs[1].Time, TimeEnd: msgs[3].Time}
	if len(recs) != 2 || !reflect.DeepEqual(recs["span-1-3"], want) {
		t.Errorf("Chunks() = %d records, span =\n%+v\nwant\n%+v", len(recs), recs["span-1-3"], want)
	}

	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if since := time.Since(stats.OldestWaiting); since < 0 || since > time.Minute {
		t.Errorf("Stats().OldestWaiting = %v, want about now: two chunks wait for vectors", stats.OldestWaiting)
	}
	stats.OldestWaiting = time.Time{}
	if stats.KeywordIndex != "memory" || stats.KeywordIndexBytes <= 0 {
		t.Errorf("Stats() keyword index %q of %d bytes, want memory", stats.KeywordIndex, stats.KeywordIndexBytes)
	}
	if stats.VectorIndexBytes < 3*testDims {
		t.Errorf("Stats().VectorIndexBytes = %d for 3 vectors of %d dims", stats.VectorIndexBytes, testDims)
	}
	stats.KeywordIndex, stats.KeywordIndexBytes, stats.VectorIndexBytes = "", 0, 0
	if want := (Stats{AppliedSeq: 10, Messages: 4, Chunks: 5, Sessions: 1, Namespaces: 1, VectorsWaiting: 2}); stats != want {
		t.Errorf("Stats() = %+v, want %+v", stats, want)
	}
	if got := counts(t, s, "agent-7"); got != (rowCounts{messages: 4, chunks: 5, fts: 5, vec: 3}) {
		t.Errorf("row counts = %+v", got)
	}
	integrity(t, s)

	// Upsert: the same seq again replaces the message.
	m := msgs[0]
	m.Text = "edited"
	mustApply(t, s, Batch{Seq: 11, Messages: []Message{m}})
	got, _ = s.SessionMessages(ctx, sc.Session, 0, 0)
	if len(got) != 4 || got[0].Text != "edited" {
		t.Errorf("after upsert: %d messages, first %q, want 4, edited", len(got), got[0].Text)
	}
}

func TestRechunk(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(3, 4))
	_, sc := session("ns", "k", "s", 4, r, testDims)
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{sc}})
	kept := sc.Chunks[2]

	// Rechunk from seq 2: chunk 2 is kept (sent without a vector), chunk 3
	// is replaced by "c-new" (with a vector), chunks 0 and 1 are untouched.
	newChunk := Chunk{ID: "c-new", Source: "sessions", SeqStart: 3, SeqEnd: 4, Text: "zebra crossing", Vector: randVec(r, testDims)}
	keptNoVec := kept
	keptNoVec.Vector = nil
	st := mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{{Session: sc.Session, From: 2, Chunks: []Chunk{keptNoVec, newChunk}}}})
	if want := (ApplyStats{ChunksInserted: 1, ChunksDeleted: 1, VectorsWritten: 1}); st != want {
		t.Errorf("Apply(rechunk) = %+v, want %+v", st, want)
	}
	spans, _ := s.SessionChunkSpans(ctx, sc.Session)
	var ids []string
	for _, sp := range spans {
		ids = append(ids, sp.ID)
	}
	if want := []string{sc.Chunks[0].ID, sc.Chunks[1].ID, kept.ID, "c-new"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("chunks after rechunk = %v, want %v", ids, want)
	}
	// The kept chunk keeps its vector: it is its own nearest neighbour.
	for _, leg := range []string{"memory", "vec0"} {
		var got []Candidate
		var err error
		if leg == "memory" {
			got, err = s.VectorSearch(ctx, "ns", kept.Vector, Filter{}, 1)
		} else {
			got, err = s.vec0Search(ctx, "ns", kept.Vector, Filter{}, 1)
		}
		if err != nil || len(got) != 1 || got[0].ID != kept.ID || got[0].Score < 0.999 {
			t.Errorf("%s: nearest to the kept chunk's vector = %+v, %v, want %s", leg, got, err, kept.ID)
		}
		got, _ = s.VectorSearch(ctx, "ns", sc.Chunks[3].Vector, Filter{}, 10)
		for _, c := range got {
			if c.ID == sc.Chunks[3].ID {
				t.Errorf("%s: replaced chunk still found by vector", leg)
			}
		}
	}
	var rows int
	s.w.QueryRow(`SELECT count(*) FROM vec_chunks`).Scan(&rows)
	if rows != 4 {
		t.Errorf("vec0 rows = %d, want 4", rows)
	}
	// The replaced chunk's text is gone from FTS, the new one is there.
	if got, _ := s.KeywordSearch(ctx, "ns", "message 3", Filter{}, 10); containsID(got, sc.Chunks[3].ID) {
		t.Errorf("replaced chunk still found by keyword: %+v", got)
	}
	if got, _ := s.KeywordSearch(ctx, "ns", "zebra", Filter{}, 10); len(got) != 1 || got[0].ID != "c-new" {
		t.Errorf("KeywordSearch(zebra) = %+v, want c-new", got)
	}
	if got := counts(t, s, "ns"); got != (rowCounts{chunks: 4, fts: 4, vec: 4}) {
		t.Errorf("row counts = %+v", got)
	}
	integrity(t, s)

	// A kept chunk that had no vector gets the one it now arrives with.
	pendingID := "c-pending"
	mustApply(t, s, Batch{Seq: 3, Rechunk: []SessionChunks{{Session: sc.Session, From: 5,
		Chunks: []Chunk{{ID: pendingID, SeqStart: 5, SeqEnd: 5, Text: "later"}}}}})
	v := randVec(r, testDims)
	st = mustApply(t, s, Batch{Seq: 4, Rechunk: []SessionChunks{{Session: sc.Session, From: 5,
		Chunks: []Chunk{{ID: pendingID, SeqStart: 5, SeqEnd: 5, Text: "later", Vector: v}}}}})
	if want := (ApplyStats{VectorsWritten: 1}); st != want {
		t.Errorf("Apply(kept chunk with a new vector) = %+v, want %+v", st, want)
	}
	if got, _ := s.VectorSearch(ctx, "ns", v, Filter{}, 1); len(got) != 1 || got[0].ID != pendingID {
		t.Errorf("VectorSearch() = %+v, want %s", got, pendingID)
	}
}

func containsID(cs []Candidate, id string) bool {
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

func TestDeleteSessions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name   string
		del    SessionRef
		remain map[string]int // session id → chunks left in ns "a" key "k"
	}{
		{"one session", SessionRef{Namespace: "a", SessionKey: "k", SessionID: "s1"}, map[string]int{"s2": 3}},
		{"every session of a key", SessionRef{Namespace: "a", SessionKey: "k"}, map[string]int{}},
		{"other namespace", SessionRef{Namespace: "a-b", SessionKey: "k"}, map[string]int{"s1": 3, "s2": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, testDims)
			var b Batch
			for _, id := range []string{"s1", "s2"} {
				m, sc := session("a", "k", id, 3, r, testDims)
				b.Messages = append(b.Messages, m...)
				b.Rechunk = append(b.Rechunk, sc)
			}
			m, sc := session("a", "other", "s1", 2, r, testDims)
			b.Messages, b.Rechunk = append(b.Messages, m...), append(b.Rechunk, sc)
			b.Seq = 1
			mustApply(t, s, b)
			mustApply(t, s, Batch{Seq: 2, DeleteSessions: []SessionRef{tc.del}})

			want := 2 // the "other" key is never touched
			for id, n := range tc.remain {
				want += n
				spans, _ := s.SessionChunkSpans(ctx, SessionRef{Namespace: "a", SessionKey: "k", SessionID: id})
				if len(spans) != n {
					t.Errorf("session %s: %d chunks, want %d", id, len(spans), n)
				}
			}
			if got := counts(t, s, "a"); got != (rowCounts{messages: want, chunks: want, fts: want, vec: want}) {
				t.Errorf("row counts = %+v, want %d each", got, want)
			}
			if got := s.index.len("a"); got != want {
				t.Errorf("in-memory vectors = %d, want %d", got, want)
			}
			integrity(t, s)
		})
	}
}

func TestAppliedSeqMonotonic(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	for _, tc := range []struct {
		seq, want uint64
	}{{5, 5}, {3, 5}, {5, 5}, {0, 5}, {9, 9}} {
		mustApply(t, s, Batch{Seq: tc.seq})
		if got, err := s.AppliedSeq(ctx); err != nil || got != tc.want {
			t.Errorf("after Apply(seq %d): AppliedSeq() = %d, %v, want %d", tc.seq, got, err, tc.want)
		}
		// The writer's in-memory sequence is the file's.
		if got, err := readAppliedSeq(ctx, s.r); err != nil || got != tc.want {
			t.Errorf("after Apply(seq %d): the file's applied sequence = %d, %v, want %d", tc.seq, got, err, tc.want)
		}
	}
	// Opened again, the shard starts from the file's.
	path := s.path
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	if got, err := s2.AppliedSeq(ctx); err != nil || got != 9 {
		t.Errorf("reopened: AppliedSeq() = %d, %v, want 9", got, err)
	}
}

func TestApplyFailureChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name    string
		failAt  string // stage after which the hook fails
		badDims bool
		want    error
	}{
		{"fails after messages", "messages", false, errInjected},
		{"fails after rechunk", "rechunk", false, errInjected},
		{"fails after seq", "seq", false, errInjected},
		{"wrong vector dims", "", true, ErrDims},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, testDims)
			m, sc := session("a", "k", "s1", 3, r, testDims)
			mustApply(t, s, Batch{Seq: 4, Messages: m, Rechunk: []SessionChunks{sc}})
			before := counts(t, s, "a")

			m2, sc2 := session("a", "k", "s2", 3, r, testDims)
			if tc.badDims {
				sc2.Chunks[2].Vector = make([]float32, testDims+1)
			}
			s.applyHook = func(stage string) error {
				if stage == tc.failAt {
					return errInjected
				}
				return nil
			}
			_, err := s.Apply(ctx, Batch{Seq: 8, DeleteSessions: []SessionRef{sc.Session}, Messages: m2, Rechunk: []SessionChunks{sc2}})
			s.applyHook = nil
			if !errors.Is(err, tc.want) {
				t.Fatalf("Apply() error = %v, want %v", err, tc.want)
			}
			if got := counts(t, s, "a"); got != before {
				t.Errorf("row counts after failed Apply = %+v, want %+v", got, before)
			}
			if got, _ := s.AppliedSeq(ctx); got != 4 {
				t.Errorf("AppliedSeq() after failed Apply = %d, want 4", got)
			}
			if got := s.index.len("a"); got != 3 {
				t.Errorf("in-memory vectors after failed Apply = %d, want 3", got)
			}
			// The shard still works.
			sc2.Chunks[2].Vector = randVec(r, testDims)
			mustApply(t, s, Batch{Seq: 8, Messages: m2, Rechunk: []SessionChunks{sc2}})
			if got, _ := s.AppliedSeq(ctx); got != 8 {
				t.Errorf("AppliedSeq() = %d, want 8", got)
			}
		})
	}
}

var errInjected = errors.New("injected failure")

func TestApplyInvalidBatch(t *testing.T) {
	s := openTest(t, testDims)
	for _, tc := range []struct {
		name string
		b    Batch
	}{
		{"empty chunk id", Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "a"}, Chunks: []Chunk{{Text: "x"}}}}}},
		{"chunk of another namespace", Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "a"}, Chunks: []Chunk{{ID: "x", Namespace: "b"}}}}}},
		{"chunk of another session", Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "a", SessionID: "1"}, Chunks: []Chunk{{ID: "x", SessionID: "2"}}}}}},
		{"seq beyond int64", Batch{Seq: 1 << 63}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Apply(context.Background(), tc.b); !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("Apply() error = %v, want ErrInvalidBatch", err)
			}
		})
	}
}

// TestReadersNeverSeeHalfABatch checks, while batches commit, that every
// snapshot a reader takes holds whole batches: each batch adds 5 messages and
// 1 chunk.
func TestReadersNeverSeeHalfABatch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	const batches = 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			st, err := s.Stats(ctx)
			if err == nil && (st.Messages != 5*st.Chunks || st.AppliedSeq != uint64(st.Chunks)) {
				err = fmt.Errorf("half a batch: %+v", st)
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
		}
	}()
	// Searches run alongside (for the race detector).
	wg.Add(1)
	go func() {
		defer wg.Done()
		q := make([]float32, testDims)
		q[0] = 1
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.VectorSearch(ctx, "a", q, Filter{}, 5); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.KeywordSearch(ctx, "a", "message topic1", Filter{SessionKey: "k"}, 5); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	r := rand.New(rand.NewPCG(31, 32))
	for i := 1; i <= batches; i++ {
		m, sc := session("a", "k", fmt.Sprint(i), 5, r, testDims)
		sc.Chunks = sc.Chunks[:1]
		mustApply(t, s, Batch{Seq: uint64(i), Messages: m, Rechunk: []SessionChunks{sc}})
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestCheckFindsInconsistency(t *testing.T) {
	s := openTest(t, testDims)
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check() on an empty shard = %v, want nil", err)
	}
	ref := SessionRef{Namespace: "ns", SessionKey: "k", SessionID: "s"}
	v := make([]float32, s.Dims())
	v[0] = 1
	b := Batch{Seq: 1, Rechunk: []SessionChunks{{Session: ref, From: 1, Chunks: []Chunk{
		{ID: "c1", SeqStart: 1, SeqEnd: 1, Text: "hello world", Vector: v},
		{ID: "c2", SeqStart: 2, SeqEnd: 2, Text: "no vector yet"},
	}}}}
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check() after Apply = %v, want nil", err)
	}
	if _, err := s.w.Exec(`DELETE FROM vec_chunks`); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Check() after losing a vector = %v, want ErrInconsistent", err)
	}
}
