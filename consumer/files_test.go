package consumer_test

import (
	"context"
	"strings"
	"testing"

	"memindex"
	"memindex/store"
)

func TestMemoryFiles(t *testing.T) {
	h := newHarness(t)
	const ns = "notes"
	ctx := context.Background()
	content := "# Setup\nInstall the kiwi toolchain.\n\n## Database\nThe database is a quokka cluster.\n"
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "setup.md", DirPath: "/work/app", Content: content})
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "global.md", Content: "# Me\nI like kiwi.\n"})
	waitFor(t, "two files indexed", func() bool { st := h.stats(ns); return st.Chunks == 3 && st.VectorsWaiting == 0 })

	got, err := h.shardOf(ns).KeywordSearch(ctx, ns, "quokka", store.Filter{}, 5)
	if err != nil || len(got) != 1 {
		t.Fatalf("KeywordSearch(quokka)=%v, %v; want one section", got, err)
	}
	recs, _ := h.shardOf(ns).ChunksByID(ctx, []string{got[0].ID})
	if r := recs[got[0].ID]; r.Path != "setup.md" || r.Source != memindex.SourceFiles || r.SeqStart != 4 || r.SeqEnd != 5 || !strings.Contains(r.Text, "Setup > Database") && !strings.Contains(r.Text, "## Database") {
		t.Fatalf("section = %+v; want setup.md lines 4-5 of the Database section", r)
	}
	// Scope: another project sees the global file only.
	if got, _ := h.shardOf(ns).KeywordSearch(ctx, ns, "kiwi", store.Filter{DirPath: "/work/other"}, 5); len(got) != 1 {
		t.Fatalf("kiwi from another project = %v, want only the global file", got)
	}
	if got, _ := h.shardOf(ns).KeywordSearch(ctx, ns, "kiwi", store.Filter{DirPath: "/work/app"}, 5); len(got) != 2 {
		t.Fatalf("kiwi from /work/app = %v, want its file and the global one", got)
	}

	// The same content again is a no-op; a change replaces; a delete removes.
	before := h.stats(ns)
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "setup.md", DirPath: "/work/app", Content: content})
	waitFor(t, "the re-sent file applied", func() bool { return h.stats(ns).AppliedSeq > before.AppliedSeq })
	if st := h.stats(ns); st.Chunks != before.Chunks {
		t.Fatalf("unchanged file: %d chunks, want %d", st.Chunks, before.Chunks)
	}
	h.publishEvent(memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "setup.md", DirPath: "/work/app", Content: "# Setup\nNow we use a wombat.\n"})
	waitFor(t, "the changed file", func() bool {
		got, _ := h.shardOf(ns).KeywordSearch(ctx, ns, "wombat", store.Filter{}, 5)
		return len(got) == 1
	})
	if got, _ := h.shardOf(ns).KeywordSearch(ctx, ns, "quokka", store.Filter{}, 5); len(got) != 0 {
		t.Fatalf("old section still found after the change: %v", got)
	}
	h.publishEvent(memindex.Event{Type: memindex.TypeFileDeleted, Namespace: ns, Path: "setup.md"})
	waitFor(t, "the deleted file", func() bool { return h.stats(ns).Chunks == 1 })
	if err := h.shardOf(ns).Check(ctx); err != nil {
		t.Fatal(err)
	}
}
