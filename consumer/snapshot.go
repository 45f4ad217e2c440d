package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/store"
)

// SnapshotBucket is the JetStream object store bucket that holds shard
// snapshots: object "p<N>/<applied seq, 20 digits>" per snapshot of
// partition N, its metadata saying what the file holds (SnapshotRef).
const SnapshotBucket = "MEMINDEX_SNAPSHOTS"

// Object metadata keys of a snapshot; stable, `nats object info` shows them.
const (
	metaPartition = "memindex-partition"
	metaSeq       = "applied-seq"
	metaSpace     = "space"
	metaDims      = "dims"
	metaSchema    = "schema"
	metaTokenizer = "tokenizer"
	metaChunks    = "chunks"
	metaVectors   = "vectors"
	metaSize      = "size"
	metaSHA256    = "sha256"
)

// SnapshotConfig sets up Snapshots. The zero value of every field has a
// sane default.
type SnapshotConfig struct {
	// Bucket is the object store bucket (default SnapshotBucket).
	Bucket string
	// Replicas of a new bucket; 0 follows the event stream's replicas.
	Replicas int
	// Keep is how many snapshots of each partition are kept (default 2);
	// older ones are deleted after each new one.
	Keep int
	// TempDir holds snapshot files while they are written and uploaded
	// (default os.TempDir()); put it on the shards' file system, it needs
	// room for one shard.
	TempDir string
	// Logger receives the periodic loop's logs; nil discards them.
	Logger *slog.Logger
}

// Validate fills defaults and checks the values.
func (c *SnapshotConfig) Validate() error {
	if c.Bucket == "" {
		c.Bucket = SnapshotBucket
	}
	if c.Keep == 0 {
		c.Keep = 2
	}
	if c.Keep < 1 {
		return fmt.Errorf("snapshot config: keep must be at least 1, got %d", c.Keep)
	}
	if c.Replicas < 0 {
		return fmt.Errorf("snapshot config: replicas must not be negative, got %d", c.Replicas)
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// SnapshotWriter writes a consistent snapshot of a shard to a new file at
// path; *store.Shard satisfies it, and so does store.SnapshotFile through
// SnapshotWriterFunc.
type SnapshotWriter interface {
	Snapshot(ctx context.Context, path string) (store.SnapshotInfo, error)
}

// SnapshotWriterFunc adapts a function to SnapshotWriter.
type SnapshotWriterFunc func(ctx context.Context, path string) (store.SnapshotInfo, error)

// Snapshot calls f.
func (f SnapshotWriterFunc) Snapshot(ctx context.Context, path string) (store.SnapshotInfo, error) {
	return f(ctx, path)
}

// Snapshotter is what the periodic snapshots need of a shard: a snapshot,
// and its applied sequence to skip a shard that did not move; *store.Shard
// satisfies it.
type Snapshotter interface {
	SnapshotWriter
	AppliedSeq(ctx context.Context) (uint64, error)
}

// SnapshotRef is one stored snapshot of a partition.
type SnapshotRef struct {
	Partition int
	// Name is the object's name in the bucket.
	Name string
	// Info is what the snapshot's metadata says the file holds.
	Info store.SnapshotInfo
	// Time is when it was stored.
	Time time.Time
}

// Snapshots stores shard snapshots in a JetStream object store and
// restores them. Its methods are safe for concurrent use, but two
// snapshots of one partition must not be taken at once.
type Snapshots struct {
	obs jetstream.ObjectStore
	cfg SnapshotConfig
}

// OpenSnapshots creates the snapshot bucket if it does not exist (with the
// event stream's replicas unless cfg says otherwise) and binds to it.
func OpenSnapshots(ctx context.Context, js jetstream.JetStream, cfg SnapshotConfig) (*Snapshots, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	obs, err := retryAttempts(ctx, func(actx context.Context) (jetstream.ObjectStore, error) {
		obs, err := js.ObjectStore(actx, cfg.Bucket)
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return obs, err
		}
		replicas := cfg.Replicas
		if replicas == 0 {
			replicas = 1
			if s, serr := js.Stream(actx, memindex.StreamEvents); serr == nil {
				replicas = max(1, s.CachedInfo().Config.Replicas)
			}
		}
		obs, err = js.CreateObjectStore(actx, jetstream.ObjectStoreConfig{
			Bucket:      cfg.Bucket,
			Description: "memindex shard snapshots; see `memindex snapshot` and `memindex rebuild --from-snapshot`",
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // another worker made it first
			return js.ObjectStore(actx, cfg.Bucket)
		}
		return obs, err
	})
	if err != nil {
		return nil, fmt.Errorf("open snapshot bucket %s: %w", cfg.Bucket, err)
	}
	return &Snapshots{obs: obs, cfg: cfg}, nil
}

// objectName names partition p's snapshot at applied sequence seq; the
// zero padding makes names sort by sequence.
func objectName(p int, seq uint64) string {
	return fmt.Sprintf("p%d/%020d", p, seq)
}

func partitionPrefix(p int) string { return "p" + strconv.Itoa(p) + "/" }

// Take snapshots sh (partition p) to a temporary file, uploads it with its
// description, removes the file and deletes the partition's snapshots
// beyond Keep. The snapshot is consistent: batches keep committing while it
// is taken, and it holds exactly those up to its applied sequence.
func (s *Snapshots) Take(ctx context.Context, p int, sh SnapshotWriter) (SnapshotRef, error) {
	ref, err := s.take(ctx, p, sh)
	if err != nil {
		return SnapshotRef{}, fmt.Errorf("snapshot partition %d: %w", p, err)
	}
	return ref, nil
}

func (s *Snapshots) take(ctx context.Context, p int, sh SnapshotWriter) (SnapshotRef, error) {
	if err := os.MkdirAll(s.cfg.TempDir, 0o755); err != nil {
		return SnapshotRef{}, fmt.Errorf("snapshot directory: %w", err)
	}
	dir, err := os.MkdirTemp(s.cfg.TempDir, "memindex-snapshot-*")
	if err != nil {
		return SnapshotRef{}, fmt.Errorf("snapshot directory: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "p"+strconv.Itoa(p)+".db")
	info, err := sh.Snapshot(ctx, path)
	if err != nil {
		return SnapshotRef{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return SnapshotRef{}, err
	}
	defer f.Close()
	name := objectName(p, info.AppliedSeq)
	var oi *jetstream.ObjectInfo
	// A loop, not cenkalti/backoff/v5's Retry: each attempt rewinds the
	// file, only a full ingest queue (429) is retried, and the error
	// returned is Put's own, which Retry replaces by context.Cause on cancel.
	for attempt := 1; ; attempt++ {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return SnapshotRef{}, fmt.Errorf("upload %s: %w", name, err)
		}
		oi, err = s.obs.Put(ctx, jetstream.ObjectMeta{
			Name:        name,
			Description: fmt.Sprintf("memindex shard of partition %d at stream sequence %d", p, info.AppliedSeq),
			Metadata:    encodeSnapshotMeta(p, info),
			Opts:        &jetstream.ObjectMetaOptions{ChunkSize: snapshotChunkSize},
		}, f)
		if err == nil || !isTooManyRequests(err) || attempt == snapshotPutAttempts || ctx.Err() != nil {
			break
		}
		// The object stream's ingest queue was full (another upload at
		// once): the partial object is purged by Put; send it again.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	if err != nil {
		return SnapshotRef{}, fmt.Errorf("upload %s: %w", name, err)
	}
	if err := s.prune(ctx, p); err != nil {
		return SnapshotRef{}, err
	}
	return SnapshotRef{Partition: p, Name: name, Info: info, Time: oi.ModTime}, nil
}

// prune deletes partition p's snapshots beyond the Keep newest.
func (s *Snapshots) prune(ctx context.Context, p int) error {
	refs, err := s.List(ctx, p)
	if err != nil {
		return err
	}
	for _, r := range refs[min(len(refs), s.cfg.Keep):] {
		if err := s.obs.Delete(ctx, r.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("delete old snapshot %s: %w", r.Name, err)
		}
	}
	return nil
}

// List returns partition p's snapshots, newest (highest applied sequence)
// first; none is not an error.
func (s *Snapshots) List(ctx context.Context, p int) ([]SnapshotRef, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var refs []SnapshotRef
	for _, oi := range infos {
		if oi.Deleted || !strings.HasPrefix(oi.Name, partitionPrefix(p)) {
			continue
		}
		info, err := decodeSnapshotMeta(oi.Metadata)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", oi.Name, err)
		}
		refs = append(refs, SnapshotRef{Partition: p, Name: oi.Name, Info: info, Time: oi.ModTime})
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Info.AppliedSeq > refs[j].Info.AppliedSeq })
	return refs, nil
}

// Restore puts partition p's newest snapshot of vector space space at path:
// it downloads it next to path, verifies it (digest, SQLite and FTS5
// integrity checks, the space, and that the file records what its metadata
// says: store.VerifySnapshot), then removes the shard at path with its
// -wal and -shm and renames the snapshot into place. The shard at path
// must not be open. It returns the restored snapshot and true, or false
// when the partition has no snapshot at all. When every snapshot of p is of
// another space it fails with an error wrapping store.ErrSpace, and a
// damaged one with store.ErrSnapshot; path is then left as it was. The
// worker that opens the restored shard replays the stream from the
// snapshot's applied sequence.
func (s *Snapshots) Restore(ctx context.Context, p int, path, space string) (SnapshotRef, bool, error) {
	ref, ok, err := s.restore(ctx, p, path, space)
	if err != nil {
		return SnapshotRef{}, false, fmt.Errorf("restore partition %d: %w", p, err)
	}
	return ref, ok, nil
}

func (s *Snapshots) restore(ctx context.Context, p int, path, space string) (SnapshotRef, bool, error) {
	refs, err := s.List(ctx, p)
	if err != nil || len(refs) == 0 {
		return SnapshotRef{}, false, err
	}
	i := slices.IndexFunc(refs, func(r SnapshotRef) bool { return space == "" || r.Info.Space == space })
	if i < 0 {
		return SnapshotRef{}, false, fmt.Errorf("the snapshots hold vectors of %q, the worker embeds with %q; rebuild from the stream instead: %w",
			refs[0].Info.Space, space, store.ErrSpace)
	}
	ref := refs[i]
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return SnapshotRef{}, false, err
	}
	tmp, err := s.download(ctx, ref.Name, path)
	if err != nil {
		return SnapshotRef{}, false, err
	}
	defer os.Remove(tmp) // a no-op once renamed
	want := ref.Info
	if space != "" {
		want.Space = space
	}
	if _, err := store.VerifySnapshot(ctx, tmp, want); err != nil {
		return SnapshotRef{}, false, fmt.Errorf("%s: %w", ref.Name, err)
	}
	// The old shard's WAL must go before the new file takes its name: it
	// would otherwise be replayed onto the snapshot.
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return SnapshotRef{}, false, fmt.Errorf("remove the old shard: %w", err)
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} { // left by VerifySnapshot, if any
		_ = os.Remove(tmp + suffix)
	}
	if err := os.Rename(tmp, path); err != nil {
		return SnapshotRef{}, false, fmt.Errorf("move the snapshot into place: %w", err)
	}
	syncDir(filepath.Dir(path))
	return ref, true, nil
}

// download writes object name to a new temporary file beside path, synced
// to disk, and returns its path. The object store verifies its own digest
// at the end of the object (jetstream.ErrDigestMismatch).
func (s *Snapshots) download(ctx context.Context, name, path string) (_ string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".restore-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	r, err := s.obs.Get(ctx, name)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", name, err)
	}
	defer r.Close()
	if _, err := io.Copy(f, r); err != nil {
		return "", fmt.Errorf("download %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes a rename in dir durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Loop takes a snapshot of every partition that shards returns and owns
// says this worker owns (nil: all), every interval, until ctx ends. A
// partition whose applied sequence has not moved since its newest snapshot,
// or that applied nothing yet, is skipped. Failures are logged and retried
// at the next interval; Loop returns when ctx ends. shards is called at
// each round, so it may follow shards that change (a new vector set).
func (s *Snapshots) Loop(ctx context.Context, interval time.Duration, shards func() map[int]Snapshotter, owns func(p int) bool) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.Round(ctx, shards(), owns)
		t.Reset(interval)
	}
}

// Round is one round of Loop: it snapshots each owned partition of shards
// whose applied sequence moved since its newest snapshot, in partition
// order, and returns the snapshots it took.
func (s *Snapshots) Round(ctx context.Context, shards map[int]Snapshotter, owns func(p int) bool) []SnapshotRef {
	parts := make([]int, 0, len(shards))
	for p := range shards {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	var took []SnapshotRef
	for _, p := range parts {
		if ctx.Err() != nil {
			return took
		}
		if owns != nil && !owns(p) {
			continue
		}
		ref, ok, err := s.takeIfChanged(ctx, p, shards[p])
		switch {
		case err != nil:
			s.cfg.Logger.Error("snapshot", attrPartition, p, attrErr, err)
		case ok:
			took = append(took, ref)
			s.cfg.Logger.Info("snapshot stored", attrPartition, p, attrSeq, ref.Info.AppliedSeq,
				"object", ref.Name, "bytes", ref.Info.Size, "chunks", ref.Info.Chunks)
		}
	}
	return took
}

func (s *Snapshots) takeIfChanged(ctx context.Context, p int, sh Snapshotter) (SnapshotRef, bool, error) {
	applied, err := sh.AppliedSeq(ctx)
	if err != nil || applied == 0 {
		return SnapshotRef{}, false, err
	}
	refs, err := s.List(ctx, p)
	if err != nil {
		return SnapshotRef{}, false, err
	}
	if len(refs) > 0 && refs[0].Info.AppliedSeq >= applied {
		return SnapshotRef{}, false, nil
	}
	ref, err := s.Take(ctx, p, sh)
	return ref, err == nil, err
}

func encodeSnapshotMeta(p int, info store.SnapshotInfo) map[string]string {
	return map[string]string{
		metaPartition: strconv.Itoa(p),
		metaSeq:       strconv.FormatUint(info.AppliedSeq, 10),
		metaSpace:     info.Space,
		metaDims:      strconv.Itoa(info.Dims),
		metaSchema:    strconv.Itoa(info.Schema),
		metaTokenizer: strconv.Itoa(info.Tokenizer),
		metaChunks:    strconv.FormatInt(info.Chunks, 10),
		metaVectors:   strconv.FormatInt(info.Vectors, 10),
		metaSize:      strconv.FormatInt(info.Size, 10),
		metaSHA256:    info.SHA256,
	}
}

func decodeSnapshotMeta(m map[string]string) (store.SnapshotInfo, error) {
	info := store.SnapshotInfo{Space: m[metaSpace], SHA256: m[metaSHA256]}
	var err error
	num := func(key string) int64 {
		n, perr := strconv.ParseInt(m[key], 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("metadata %s=%q is not a number", key, m[key])
		}
		return n
	}
	info.AppliedSeq = uint64(num(metaSeq))
	info.Dims = int(num(metaDims))
	info.Schema = int(num(metaSchema))
	info.Tokenizer = int(num(metaTokenizer))
	info.Chunks = num(metaChunks)
	info.Vectors = num(metaVectors)
	info.Size = num(metaSize)
	if err == nil && info.SHA256 == "" {
		err = errors.New("metadata has no sha256")
	}
	return info, err
}

// snapshotChunkSize is the object store chunk size of a snapshot upload.
// The object store publishes chunks asynchronously, up to 4,000 of them
// unacknowledged, and a stream refuses publishes with "429 too many
// requests" once 128 MiB wait in its ingest queue: with nats.go's default
// 128 KiB chunks a shard of a few hundred MiB uploaded faster than the
// server's disk writes failed that way (a 274 MiB shard on a loaded box,
// TestMovePartitionBench). At 16 KiB at most 64 MiB are in flight.
const snapshotChunkSize = 16 << 10

// snapshotPutAttempts bounds the uploads of one snapshot refused with 429.
const snapshotPutAttempts = 3

// isTooManyRequests reports whether err is JetStream's "too many requests"
// (a stream's ingest queue full).
func isTooManyRequests(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errCodeTooManyRequests || apiErr.Code == 429
	}
	return strings.Contains(err.Error(), "too many requests")
}

// errCodeTooManyRequests is nats-server's JSStreamTooManyRequests.
const errCodeTooManyRequests jetstream.ErrorCode = 10167
