package consumer_test

import (
	"context"
	"testing"

	"memindex"
	"memindex/store"
)

func TestMemoryRecordsMergeNearDuplicates(t *testing.T) {
	h := newHarness(t)
	const ns = "facts"
	ctx := context.Background()
	records := func() map[string]store.ChunkRecord {
		got, err := h.shardOf(ns).KeywordSearch(ctx, ns, "ana lisbon green colour favourite", store.Filter{Sources: []string{memindex.SourceRecords}}, 50)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, c := range got {
			ids[i] = c.ID
		}
		recs, err := h.shardOf(ns).ChunksByID(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]store.ChunkRecord{}
		for _, r := range recs {
			byID[r.Path+"|"+r.SessionKey] = r
		}
		return byID
	}
	rec := func(id, key, text string) memindex.Event {
		return memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: ns, ID: id, SessionKey: key, Text: text}
	}
	waitSeq := func(what string) {
		before := h.stats(ns).AppliedSeq
		waitFor(t, what, func() bool { st := h.stats(ns); return st.AppliedSeq > before && st.VectorsWaiting == 0 })
	}
	h.publishEvent(rec("r1", "", "Ana's favourite colour is green"))
	waitFor(t, "r1", func() bool { return len(records()) == 1 })

	h.publishEvent(rec("r2", "", "Ana's favourite colour is green."))
	waitSeq("r2")
	got := records()
	if len(got) != 1 || got["r1|"].Text != "Ana's favourite colour is green." {
		t.Fatalf("after a near-duplicate: %v; want r1 updated with the new text", got)
	}

	h.publishEvent(rec("r3", "chat", "Ana's favourite colour is green"))
	waitSeq("r3 in another scope")
	if got := records(); len(got) != 2 || got["r3|chat"].Path != "r3" {
		t.Fatalf("a near-duplicate in another scope: %v; want it added as r3", got)
	}

	h.publishEvent(rec("r1", "", "Ana moved to Lisbon in May"))
	waitSeq("r1 rewritten")
	if got := records(); len(got) != 2 || got["r1|"].Text != "Ana moved to Lisbon in May" {
		t.Fatalf("after rewriting r1: %v; want r1's new text and r3", got)
	}

	h.publishEvent(memindex.Event{Type: memindex.TypeRecordDeleted, Namespace: ns, ID: "r3"})
	waitSeq("r3 deleted")
	if got := records(); len(got) != 1 {
		t.Fatalf("after deleting r3: %v; want only r1", got)
	}
	if err := h.shardOf(ns).Check(ctx); err != nil {
		t.Fatal(err)
	}
}
