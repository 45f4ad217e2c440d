package consumer

import (
	"context"
	"fmt"

	"memindex"
	"memindex/store"
)

// RecordMergeCosine is the similarity from which a new memory record updates
// an existing record of the same scope instead of adding a near-duplicate.
const RecordMergeCosine = 0.85

// mergeNearDuplicates points each record upsert that has a vector and is
// not an update of itself at the most similar existing record of the same
// scope (sessionKey and sessionId, "" included) when that one is within
// RecordMergeCosine; the store then replaces that record's text and it keeps
// its id. It returns how many it merged. Records without a vector (the
// embedder did not answer) are added as they are.
func mergeNearDuplicates(ctx context.Context, sh Shard, recs []store.RecordUpsert) (int, error) {
	merged := 0
	for i := range recs {
		r := &recs[i]
		c := r.Chunk
		if c.Vector == nil {
			continue
		}
		cands, err := sh.VectorSearch(ctx, c.Namespace, c.Vector,
			store.Filter{Sources: []string{memindex.SourceRecords}, SessionKey: c.SessionKey, SessionID: c.SessionID}, 8)
		if err != nil {
			return merged, fmt.Errorf("record %s: near-duplicates: %w", c.Path, err)
		}
		refs := make([]store.ChunkRef, 0, len(cands))
		for _, cd := range cands {
			if cd.Score >= RecordMergeCosine {
				refs = append(refs, cd.Ref())
			}
		}
		if len(refs) == 0 {
			continue
		}
		stored, err := sh.Chunks(ctx, refs)
		if err != nil {
			return merged, fmt.Errorf("record %s: near-duplicates: %w", c.Path, err)
		}
		for _, ref := range refs { // best first
			s, ok := stored[ref.ID]
			if !ok || s.Namespace != c.Namespace || s.SessionKey != c.SessionKey || s.SessionID != c.SessionID {
				continue
			}
			if s.Path != c.Path {
				r.MergeInto = s.Path
				merged++
			}
			break // the closest record of the scope decides
		}
	}
	return merged, nil
}
