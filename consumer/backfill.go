package consumer

import (
	"context"
	"memindex/chunker"
	"time"

	"memindex/embedder"
	"memindex/store"
)

// backfill embeds chunks that committed without a vector, in bounded
// batches, until ctx ends. It wakes every BackfillInterval or when a commit
// left chunks waiting.
func (w *Worker) backfill(ctx context.Context, p *partition) {
	t := time.NewTimer(w.cfg.BackfillInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
		for ctx.Err() == nil {
			n, err := w.backfillOnce(ctx, p)
			if err != nil {
				w.log.Warn("backfill", attrPartition, p.id, attrErr, err)
				break
			}
			if n < w.cfg.BackfillBatch {
				break
			}
		}
		t.Reset(w.cfg.BackfillInterval)
	}
}

// backfillOnce embeds one batch of waiting chunks and returns how many it
// looked at.
func (w *Worker) backfillOnce(ctx context.Context, p *partition) (int, error) {
	pending, err := p.shard.PendingVectors(ctx, w.cfg.BackfillBatch)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	texts := make([]string, len(pending))
	for i, c := range pending {
		texts[i] = chunker.EmbedText(c.Context, c.Text)
	}
	vecs, err := w.emb.Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
	if err == nil {
		err = embedder.CheckVectors(vecs, len(texts), w.emb.Info().Dims)
	}
	if err != nil {
		return 0, err
	}
	vs := make([]store.ChunkVector, len(pending))
	for i, c := range pending {
		vs[i] = store.ChunkVector{ID: c.ID, Row: c.Row, Vector: vecs[i]}
	}
	if _, err := p.shard.SetVectors(ctx, vs); err != nil {
		w.metrics.ShardError(p.id, err)
		return 0, err
	}
	return len(pending), nil
}
