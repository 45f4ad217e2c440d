package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// bucketKeys lists the keys of a JetStream key-value bucket that hold a
// value (not deleted, not expired).
//
// kv.ListKeys alone misses keys of a busy bucket: its listing ends once
// it has received as many entries as the bucket held when it began, and
// a key written again while it lists is delivered twice, so the count
// can be reached before a key rewritten meanwhile comes round (in a
// scratch test, 72 of 200 listings of 40 keys rewritten in a loop
// missed one; TestBucketKeysMissNothing runs such listings through
// list). A lease bucket is such a bucket, its keys renewed every few
// hundred milliseconds, and a replica lease missing from the list let
// another worker take the owner slot the replica was about to be
// promoted to. So the stream's subjects, which the server reads at one
// instant, are read after the listing, and a key among them the listing
// did not report is read directly, which tells a live key from a delete
// marker.
//
// A listing ends when the server has delivered what the bucket held, and
// nats.go waits for that without a deadline of its own: a listing whose
// last entries never arrive would stall the caller (the leaser's main
// loop, which then claims nothing). So each listing has one, wait.
type bucketKeys struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
	prefix string        // subject prefix of the bucket's keys, "$KV.<bucket>."
	wait   time.Duration // how long one listing may take
}

// listWait bounds a listing of a bucket's keys, as jetstream bounds an API
// request without a deadline.
const listWait = 5 * time.Second

// openBucketKeys returns the key lister of bucket kv.
func openBucketKeys(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (*bucketKeys, error) {
	bucket := kv.Bucket()
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("stream of bucket %s: %w", bucket, err)
	}
	return &bucketKeys{kv: kv, stream: st, prefix: "$KV." + bucket + ".", wait: listWait}, nil
}

// list returns the bucket's live keys, in no particular order.
func (b *bucketKeys) list(ctx context.Context) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	lister, err := b.kv.ListKeys(lctx)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	var out []string
	for k := range lister.Keys() {
		if !listed[k] {
			listed[k] = true
			out = append(out, k)
		}
	}
	_ = lister.Stop() // the listing ended; nothing to do about an error
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := lctx.Err(); err != nil {
		return nil, fmt.Errorf("keys of bucket %s: the listing did not end within %s: %w", b.kv.Bucket(), b.wait, err)
	}
	info, err := b.stream.Info(ctx, jetstream.WithSubjectFilter(b.prefix+">"))
	if err != nil {
		return nil, fmt.Errorf("subjects of bucket %s: %w", b.kv.Bucket(), err)
	}
	for subject := range info.State.Subjects {
		k, ok := strings.CutPrefix(subject, b.prefix)
		if !ok || listed[k] {
			continue
		}
		switch _, err := b.kv.Get(ctx, k); {
		case err == nil:
			out = append(out, k)
		case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
			// a delete marker, or gone since the subjects were read
		default:
			return nil, fmt.Errorf("read key %s of bucket %s: %w", k, b.kv.Bucket(), err)
		}
	}
	return out, nil
}
